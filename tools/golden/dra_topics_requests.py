"""Topics of the `dra` family about what one claim asks for: selectors, counts, All, firstAvailable,
matchAttribute, config and admin access."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from kss_sim.kube.objects import Obj
from tools.golden import dra_objects as k
from tools.golden.dra_cluster import (
    GPU,
    GPU_CLASS,
    GPU_MODELS,
    NIC,
    NIC_CLASS,
    PCIE_ROOT,
    Scenario,
    attr,
    cap,
    gpu_class,
    gpu_device,
    nic_class,
    nic_device,
)

Topic = Callable[[], Iterator[Scenario]]
MODELS = list(GPU_MODELS)


def _models(s: Scenario, count: int) -> list[str]:
    """`count` node models that cover every model at least once when count >= 4."""
    models = MODELS[:]
    s.rng.shuffle(models)
    return [models[i % len(models)] for i in range(count)]


# (what it exercises, class selectors, request selectors, attributes qualified with the driver domain)
SELECTOR_VARIANTS: list[tuple[str, list[str], list[str], bool]] = [
    ("string attribute equality", [], [f'{attr("model")} == "a100"'], False),
    ("string attribute in a list", [], [f'{attr("model")} in ["h100", "l4"]'], False),
    ("string attribute regular expression", [], [f'{attr("model")}.matches("^[al][0-9]+$")'], False),
    ("int attribute comparison", [], [f"{attr('cores')} >= 7000"], False),
    ("int attribute arithmetic (even device index)", [], [f"{attr('index')} % 2 == 0"], False),
    ("bool attribute", [], [f"{attr('mig')}"], False),
    ("negated bool attribute", [], [f"!{attr('mig')}"], False),
    (
        "version attribute isGreaterThan(semver)",
        [],
        [f'{attr("driverVersion")}.isGreaterThan(semver("12.2.0"))'],
        False,
    ),
    ("version attribute compareTo(semver)", [], [f'{attr("driverVersion")}.compareTo(semver("12.0.0")) < 0'], False),
    ("version attribute major()", [], [f"{attr('driverVersion')}.major() == 12"], False),
    ("capacity compareTo(quantity)", [], [f'{cap("memory")}.compareTo(quantity("40Gi")) >= 0'], False),
    ("capacity isGreaterThan(quantity)", [], [f'{cap("memory")}.isGreaterThan(quantity("24Gi"))'], False),
    ("capacity isLessThan(quantity) in other units", [], [f'{cap("memory")}.isLessThan(quantity("40960Mi"))'], False),
    ("device.driver", [], [f'device.driver == "{GPU}"'], False),
    ("fully qualified attribute names read through the driver domain", [], [f'{attr("model")} == "h100"'], True),
    (
        "fully qualified capacity names read through the driver domain",
        [],
        [f'{cap("memory")}.compareTo(quantity("24Gi")) <= 0'],
        True,
    ),
    (
        "a standard attribute in another domain",
        [],
        [f'device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:00" && {attr("index")} == 1'],
        False,
    ),
    ("has() on an attribute", [], [f'has({attr("model")}) && {attr("model")} != "t4"'], False),
    (
        "&& and || together",
        [],
        [f'({attr("model")} == "a100" || {attr("model")} == "l4") && {attr("index")} < 2'],
        False,
    ),
    (
        "class selector and request selector together",
        [f'{cap("memory")}.compareTo(quantity("24Gi")) >= 0'],
        [f'{attr("model")} != "h100"'],
        False,
    ),
    ("two class selectors", [f"{attr('cores')} > 3000", f"!{attr('mig')}"], [], False),
    (
        "two request selectors",
        [],
        [f'{attr("model")}.startsWith("a") || {attr("model")}.endsWith("4")', f"{attr('index')} == 0"],
        False,
    ),
    ("string functions (size, contains)", [], [f'{attr("model")}.size() == 2 && {attr("model")}.contains("4")'], False),
    (
        "quantity arithmetic-free comparison with sign",
        [],
        [f"{cap('memory')}.sign() == 1 && {cap('memory')}.isInteger()"],
        False,
    ),
]


def selectors() -> Iterator[Scenario]:
    for i, (what, class_selectors, request_selectors, qualified) in enumerate(SELECTOR_VARIANTS):
        s = Scenario(f"dra-selector-{i:03d}", f"CEL device selectors: {what}; devices used up pod by pod")
        nodes = s.rng.randint(3, 6)
        for n, model in enumerate(_models(s, nodes)):
            name = f"node-{n:02d}"
            s.node(name, cpu=str(s.rng.choice([4, 8, 16])))
            per_node = s.rng.randint(1, 4)
            s.local_slice(
                name, [gpu_device(j, model, mig=(n + j) % 3 == 0, qualified=qualified) for j in range(per_node)]
            )
        s.device_classes.append(gpu_class(GPU_CLASS, *class_selectors))
        for p in range(s.rng.randint(2, 8)):
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS, *request_selectors))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}", cpu=s.rng.choice(["250m", "500m", "1"]))
        yield s


CEL_ERROR_VARIANTS: list[tuple[str, list[str], list[str]]] = [
    (
        "a request selector reads an attribute some devices lack (no such key at runtime)",
        [],
        [f"{attr('numaNode')} == 0"],
    ),
    ("a class selector reads an attribute some devices lack", [f"{attr('numaNode')} >= 0"], []),
    ("the same attribute guarded by has(): no error", [], [f"has({attr('numaNode')}) && {attr('numaNode')} == 0"]),
    (
        "a domain no device has (empty map default, then no such key)",
        [],
        ['device.attributes["other.example.com"].model == "x"'],
    ),
]


def cel_errors() -> Iterator[Scenario]:
    for i, (what, class_selectors, request_selectors) in enumerate(CEL_ERROR_VARIANTS):
        s = Scenario(f"dra-celerror-{i:03d}", f"CEL runtime errors: {what}")
        for n in range(s.rng.randint(2, 4)):
            name = f"node-{n:02d}"
            s.node(name)
            with_numa = n % 2 == 1
            s.local_slice(
                name,
                [gpu_device(j, "a100", extra={"numaNode": j} if with_numa else None) for j in range(2)],
            )
        s.device_classes.append(gpu_class(GPU_CLASS, *class_selectors))
        for p in range(s.rng.randint(1, 3)):
            s.claim(f"claim-p{p:02d}", k.exactly("gpu", GPU_CLASS, *request_selectors))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s


def counts() -> Iterator[Scenario]:
    for i in range(8):
        s = Scenario(f"dra-count-{i:03d}", "")
        nodes = s.rng.randint(2, 5)
        per_node = [s.rng.randint(1, 4) for _ in range(nodes)]
        for n, devices in enumerate(per_node):
            s.node(f"node-{n:02d}")
            s.local_slice(f"node-{n:02d}", [gpu_device(j, "l4") for j in range(devices)])
        s.device_classes.append(gpu_class())
        asks = [s.rng.randint(1, max(per_node) + (1 if i % 3 == 0 else 0)) for _ in range(s.rng.randint(2, 6))]
        for p, count in enumerate(asks):
            s.claim(f"claim-p{p:02d}", k.exactly("gpus", GPU_CLASS, count=count))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        s.description = (
            f"ExactCount requests of {asks} devices against nodes with {per_node} GPUs: "
            "node-local pools fill up, too-large counts fit nowhere"
        )
        yield s


def all_mode() -> Iterator[Scenario]:
    variants = [
        ("allocationMode All takes every GPU of the node", [], False, False),
        ("allocationMode All with a selector: every matching GPU", [f"{attr('index')} < 2"], False, False),
        ("allocationMode All after another pod took one device of a node", [], True, False),
        (
            "allocationMode All beside an ExactCount request in the same claim",
            [f'{attr("model")} == "t4"'],
            False,
            False,
        ),
        ("allocationMode All on a node whose pool is incomplete (resourceSliceCount 2, one slice)", [], False, True),
        (
            "allocationMode All with a selector no device matches on some nodes",
            [f'{attr("model")} == "h100"'],
            False,
            False,
        ),
    ]
    for i, (what, selectors_, first_takes_one, incomplete) in enumerate(variants):
        s = Scenario(f"dra-all-{i:03d}", what)
        for n, model in enumerate(_models(s, s.rng.randint(2, 4))):
            name = f"node-{n:02d}"
            s.node(name)
            devices = [gpu_device(j, model) for j in range(s.rng.randint(1, 4))]
            s.local_slice(name, devices, slice_count=2 if incomplete and n == 0 else 1)
        s.device_classes.append(gpu_class())
        if first_takes_one:
            s.claim("claim-one", k.exactly("gpu", GPU_CLASS))
            s.pending_pod("p00-one", "claim-one")
        requests = [k.exactly("all", GPU_CLASS, *selectors_, all_devices=True)]
        if i == 3:
            requests.append(k.exactly("one", GPU_CLASS, f'{attr("model")} != "t4"'))
        for p in range(s.rng.randint(1, 3)):
            s.claim(f"claim-p{p:02d}", *requests)
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s


def first_available() -> Iterator[Scenario]:
    model_sel = [f'{attr("model")} == "{m}"' for m in MODELS]
    variants: list[tuple[str, list[Obj], dict[str, bool] | None]] = [
        (
            "firstAvailable h100, then a100, then l4: Score prefers nodes offering the higher-ranked subrequest",
            [
                k.subrequest("h100", GPU_CLASS, model_sel[1]),
                k.subrequest("a100", GPU_CLASS, model_sel[0]),
                k.subrequest("l4", GPU_CLASS, model_sel[2]),
            ],
            None,
        ),
        (
            "firstAvailable two GPUs of one model else one of another",
            [
                k.subrequest("two-a100", GPU_CLASS, model_sel[0], count=2),
                k.subrequest("one-l4", GPU_CLASS, model_sel[2]),
            ],
            None,
        ),
        (
            "firstAvailable with an All subrequest first",
            [k.subrequest("all-t4", GPU_CLASS, model_sel[3], all_devices=True), k.subrequest("any", GPU_CLASS)],
            None,
        ),
        (
            "firstAvailable where no subrequest fits some nodes",
            [k.subrequest("h100", GPU_CLASS, model_sel[1]), k.subrequest("t4", GPU_CLASS, model_sel[3])],
            None,
        ),
        (
            "firstAvailable whose subrequests use different classes (GPU, else NIC)",
            [k.subrequest("gpu", GPU_CLASS, model_sel[1]), k.subrequest("nic", NIC_CLASS)],
            None,
        ),
        (
            "firstAvailable with DRAPrioritizedList off: PreFilter refuses the claim",
            [k.subrequest("h100", GPU_CLASS, model_sel[1]), k.subrequest("a100", GPU_CLASS, model_sel[0])],
            {"DRAPrioritizedList": False},
        ),
        (
            "firstAvailable naming a missing DeviceClass in the second subrequest",
            [k.subrequest("h100", GPU_CLASS, model_sel[1]), k.subrequest("other", "missing.example.com")],
            None,
        ),
        (
            "firstAvailable over eight subrequests (the maximum), scores 8 down to 1",
            [k.subrequest(f"s{j}", GPU_CLASS, f"{attr('cores')} > {16000 - j * 2000}") for j in range(8)],
            None,
        ),
    ]
    for i, (what, subs, gates) in enumerate(variants):
        s = Scenario(f"dra-firstavailable-{i:03d}", what, gates)
        for n, model in enumerate(_models(s, s.rng.randint(3, 6))):
            name = f"node-{n:02d}"
            s.node(name)
            s.local_slice(name, [gpu_device(j, model) for j in range(s.rng.randint(1, 3))])
            if n % 2 == 0:
                s.local_slice(name, [nic_device(j) for j in range(2)], driver=NIC)
        s.device_classes += [gpu_class(), nic_class()]
        for p in range(s.rng.randint(2, 7)):
            s.claim(f"claim-p{p:02d}", k.first_available("gpu", *subs))
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s
    # firstAvailable beside an ExactCount request, and two firstAvailable requests in one claim.
    for i, extra in enumerate(["exact", "two"], start=len(variants)):
        s = Scenario(
            f"dra-firstavailable-{i:03d}",
            "firstAvailable beside an ExactCount NIC request"
            if extra == "exact"
            else "two firstAvailable requests in one claim: the score adds both",
        )
        for n, model in enumerate(_models(s, s.rng.randint(3, 5))):
            name = f"node-{n:02d}"
            s.node(name)
            s.local_slice(name, [gpu_device(j, model) for j in range(2)])
            s.local_slice(name, [nic_device(j) for j in range(n % 3)], driver=NIC)
        s.device_classes += [gpu_class(), nic_class()]
        for p in range(s.rng.randint(2, 5)):
            first = k.first_available(
                "gpu", k.subrequest("big", GPU_CLASS, model_sel[1]), k.subrequest("small", GPU_CLASS)
            )
            second = (
                k.exactly("nic", NIC_CLASS)
                if extra == "exact"
                else k.first_available(
                    "nic", k.subrequest("rdma", NIC_CLASS, f"{attr('rdma', NIC)}"), k.subrequest("any", NIC_CLASS)
                )
            )
            s.claim(f"claim-p{p:02d}", first, second)
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s


def match_attributes() -> Iterator[Scenario]:
    variants = [
        ("matchAttribute pcieRoot pairs a GPU with a NIC on the same PCIe root", PCIE_ROOT, ["gpu", "nic"]),
        ("matchAttribute pcieRoot for every request (no requests list)", PCIE_ROOT, []),
        ("matchAttribute on the GPU model across two GPUs of mixed-model nodes", f"{GPU}/model", ["gpus"]),
        ("matchAttribute on driverVersion across two GPUs", f"{GPU}/driverVersion", ["gpus"]),
        ("matchAttribute on an attribute the NIC lacks: never satisfied", f"{GPU}/model", ["gpu", "nic"]),
        ("matchAttribute on the int index across two GPUs: devices of a pool never share it", f"{GPU}/index", ["gpus"]),
    ]
    for i, (what, attribute, requests) in enumerate(variants):
        s = Scenario(f"dra-matchattribute-{i:03d}", what)
        for n in range(s.rng.randint(2, 5)):
            name = f"node-{n:02d}"
            s.node(name)
            models = [s.rng.choice(MODELS) for _ in range(s.rng.randint(2, 4))]
            s.local_slice(name, [gpu_device(j, m) for j, m in enumerate(models)])
            s.local_slice(name, [nic_device(j * 2 + n % 2) for j in range(s.rng.randint(1, 2))], driver=NIC)
        s.device_classes += [gpu_class(), nic_class()]
        for p in range(s.rng.randint(1, 5)):
            if "gpus" in requests:
                reqs = [k.exactly("gpus", GPU_CLASS, count=2)]
            else:
                reqs = [k.exactly("gpu", GPU_CLASS), k.exactly("nic", NIC_CLASS)]
            s.claim(f"claim-p{p:02d}", *reqs, constraints=[k.match_attribute(attribute, *requests)])
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s


def configs() -> Iterator[Scenario]:
    class_config = [k.opaque(GPU, {"apiVersion": "gpu.example.com/v1", "kind": "GpuConfig", "sharing": "TimeSlicing"})]
    variants = [
        ("DeviceClass opaque config: the allocation carries it FromClass", True, False),
        ("claim opaque config for one request: FromClaim", False, True),
        ("class and claim config together: FromClass first, then FromClaim", True, True),
        ("claim config for every request (no requests list) with two requests of two classes", False, True),
    ]
    for i, (what, with_class, with_claim) in enumerate(variants):
        s = Scenario(f"dra-config-{i:03d}", what)
        for n in range(s.rng.randint(2, 4)):
            s.node(f"node-{n:02d}")
            s.local_slice(f"node-{n:02d}", [gpu_device(j, "a100") for j in range(2)])
            s.local_slice(f"node-{n:02d}", [nic_device(j) for j in range(2)], driver=NIC)
        s.device_classes += [gpu_class(config=class_config if with_class else ()), nic_class()]
        for p in range(s.rng.randint(1, 4)):
            reqs = [k.exactly("gpu", GPU_CLASS)]
            config: list[Obj] = []
            if i == 3:
                reqs.append(k.exactly("nic", NIC_CLASS))
                config.append(k.claim_config(GPU, {"kind": "Shared", "replicas": p + 1}))
            elif with_claim:
                config.append(k.claim_config(GPU, {"kind": "GpuClaimParameters", "memoryLimit": "8Gi"}, "gpu"))
            s.claim(f"claim-p{p:02d}", *reqs, config=config)
            s.pending_pod(f"p{p:02d}", f"claim-p{p:02d}")
        yield s


def admin_access() -> Iterator[Scenario]:
    variants: list[tuple[str, bool, dict[str, bool] | None]] = [
        ("adminAccess in a namespace labelled admin-access: takes devices other claims hold", True, None),
        (
            "adminAccess whose namespace lost its admin-access label after the claim was made: "
            "kube-scheduler does not re-check the label",
            False,
            None,
        ),
        ("adminAccess with DRAAdminAccess off: the allocator refuses the request", True, {"DRAAdminAccess": False}),
        ("adminAccess false in a labelled namespace: an ordinary request", True, None),
    ]
    for i, (what, labelled, gates) in enumerate(variants):
        s = Scenario(f"dra-adminaccess-{i:03d}", what, gates)
        s.namespace("monitoring", {k.ADMIN_ACCESS_LABEL: "true"} if labelled else None)
        nodes = s.rng.randint(2, 4)
        for n in range(nodes):
            s.node(f"node-{n:02d}")
            s.local_slice(f"node-{n:02d}", [gpu_device(0, "a100")])
        s.device_classes.append(gpu_class())
        # Every GPU is already held by a bound workload.
        for n in range(nodes):
            c = s.claim(f"work-{n:02d}", k.exactly("gpu", GPU_CLASS))
            owner = s.bound_pod(f"work-{n:02d}", f"node-{n:02d}", f"work-{n:02d}")
            k.allocate(c, [("gpu", GPU, f"node-{n:02d}", "gpu-0")], node_name=f"node-{n:02d}", reserved_for=[owner])
        for p in range(s.rng.randint(1, 3)):
            s.claim(f"monitor-{p:02d}", k.exactly("gpu", GPU_CLASS, admin_access=i != 3), namespace="monitoring")
            s.pending_pod(f"monitor-{p:02d}", f"monitor-{p:02d}", namespace="monitoring")
        yield s


TOPICS: list[Topic] = [
    selectors,
    cel_errors,
    counts,
    all_mode,
    first_available,
    match_attributes,
    configs,
    admin_access,
]

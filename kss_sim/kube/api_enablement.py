"""Which API group versions a run serves: each release's defaults, changed by ``--runtime-config`` as kube-apiserver's
flag changes them (``resource.k8s.io/v1beta1=true,api/beta=false``).

Since v1.24 (KEP-3136) a beta API is off by default: kube-apiserver serves a beta group version only when
``--runtime-config`` enables it, and an alpha one never by default. The DRA group shows it best: resource.k8s.io/v1beta1
(v1.32) and v1beta2 (v1.33) are off by default in every release, resource.k8s.io/v1 is on from v1.34, when it went GA
(``RESOURCE_VERSIONS``). The workload-scheduling kinds (scheduling.k8s.io/v1alpha1 at v1.35, v1alpha2 at v1.36,
the beta v1beta1 at v1.37) likewise need ``scheduling.k8s.io/v1alpha1=true`` (or v1alpha2, v1beta1, or
``api/alpha=true`` / ``api/beta=true``) besides their GenericWorkload gate. docs/versions.md has the tables and
their sources.

The flag's syntax and errors are upstream's (k8s.io/apiserver's resourceconfig.MergeAPIResourceConfigs): comma-
separated ``key=value`` pairs, a key alone meaning true; ``api/all``, ``api/ga``, ``api/beta`` and ``api/alpha``
(values true or false) applied first, in that order, then ``group/version`` and ``group/version/resource`` keys
(values as Go's strconv.ParseBool reads them), a resource's own setting above its version's. A key of a group no
scheme of kube-apiserver registers is refused (``unknown api groups``), and so is a version the release does not
register, of a group it has (``REGISTERED_VERSIONS``); a registered version kss does not serve is accepted and
changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping

# The kube-apiserver of each minor version registers these resource.k8s.io versions (k8s.io/api/resource of the
# vendored trees; v1alpha3 serves only DeviceTaintRule from v1.34 on, which kss does not serve).
RESOURCE_GROUP = "resource.k8s.io"
RESOURCE_VERSIONS: dict[int, tuple[str, ...]] = {
    33: ("v1beta2", "v1beta1", "v1alpha3"),
    34: ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    35: ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    36: ("v1", "v1beta2", "v1beta1", "v1alpha3"),
    # v1.37 (ported, not measured): assumed v1.36's; no v1.37 k8s.io/api/resource tree was read.
    37: ("v1", "v1beta2", "v1beta1", "v1alpha3"),
}
MINORS = tuple(RESOURCE_VERSIONS)

# The group versions every release from 1.33 to 1.36 registers in kube-apiserver's schemes: k8s.io/api's packages of
# each vendored tree (the legacy scheme installs them all, served or not: apps/v1beta1 is registered, long unserved),
# and the apiextensions and aggregator servers' own groups.
_ALWAYS_REGISTERED: dict[str, tuple[str, ...]] = {
    "": ("v1",),
    "admission.k8s.io": ("v1", "v1beta1"),
    "admissionregistration.k8s.io": ("v1", "v1beta1", "v1alpha1"),
    "apiextensions.k8s.io": ("v1", "v1beta1"),
    "apiregistration.k8s.io": ("v1", "v1beta1"),
    "apps": ("v1", "v1beta2", "v1beta1"),
    "authentication.k8s.io": ("v1", "v1beta1", "v1alpha1"),
    "authorization.k8s.io": ("v1", "v1beta1"),
    "autoscaling": ("v1", "v2"),
    "batch": ("v1", "v1beta1"),
    "certificates.k8s.io": ("v1", "v1beta1", "v1alpha1"),
    "coordination.k8s.io": ("v1", "v1beta1", "v1alpha2"),
    "discovery.k8s.io": ("v1", "v1beta1"),
    "events.k8s.io": ("v1", "v1beta1"),
    "extensions": ("v1beta1",),
    "flowcontrol.apiserver.k8s.io": ("v1", "v1beta3", "v1beta2", "v1beta1"),
    "imagepolicy.k8s.io": ("v1alpha1",),
    "internal.apiserver.k8s.io": ("v1alpha1",),
    "networking.k8s.io": ("v1", "v1beta1"),
    "node.k8s.io": ("v1", "v1beta1", "v1alpha1"),
    "policy": ("v1", "v1beta1"),
    "rbac.authorization.k8s.io": ("v1", "v1beta1", "v1alpha1"),
    "scheduling.k8s.io": ("v1", "v1beta1"),
    "storage.k8s.io": ("v1", "v1beta1", "v1alpha1"),
}
# What each release adds: autoscaling's v2beta1 and v2beta2 left the scheme in 1.36, networking v1alpha1 in 1.34;
# scheduling.k8s.io/v1alpha1 (once PriorityClass's, v1.35's Workload) gave way to v1alpha2 in 1.36;
# storagemigration.k8s.io went from v1alpha1 to v1beta1 in 1.35. In 1.37 the Workload API went beta: Workload and
# PodGroup in scheduling.k8s.io/v1beta1 (off by default), CompositePodGroup in v1alpha3, v1alpha2 dropped
# (CHANGELOG-1.37.md, kubernetes/kubernetes#138572; the v1.37 Workload-aware scheduling blog post's v1beta1);
# scheduling.k8s.io/v1beta1 is registered in every release already (PriorityClass's).
_RELEASE_REGISTERED: dict[int, dict[str, tuple[str, ...]]] = {
    33: {
        "autoscaling": ("v2beta1", "v2beta2"),
        "networking.k8s.io": ("v1alpha1",),
        "scheduling.k8s.io": ("v1alpha1",),
        "storagemigration.k8s.io": ("v1alpha1",),
    },
    34: {
        "autoscaling": ("v2beta1", "v2beta2"),
        "scheduling.k8s.io": ("v1alpha1",),
        "storagemigration.k8s.io": ("v1alpha1",),
    },
    35: {
        "autoscaling": ("v2beta1", "v2beta2"),
        "scheduling.k8s.io": ("v1alpha1",),
        "storagemigration.k8s.io": ("v1beta1",),
    },
    36: {"scheduling.k8s.io": ("v1alpha2",), "storagemigration.k8s.io": ("v1beta1",)},
    37: {"scheduling.k8s.io": ("v1alpha3",), "storagemigration.k8s.io": ("v1beta1",)},
}


def _registered(minor: int) -> dict[str, tuple[str, ...]]:
    out = dict(_ALWAYS_REGISTERED)
    for group, versions in _RELEASE_REGISTERED[minor].items():
        out[group] = out.get(group, ()) + versions
    out[RESOURCE_GROUP] = RESOURCE_VERSIONS[minor]
    return out


# Every group version kube-apiserver 1.``minor`` registers, by group: a version not among them is refused.
REGISTERED_VERSIONS: dict[int, dict[str, tuple[str, ...]]] = {minor: _registered(minor) for minor in MINORS}
# kube-apiserver's groupVersionMatchersOrder: the keys that match every version of a stability, applied first.
_MATCHERS = ("api/all", "api/ga", "api/beta", "api/alpha")
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})

RuntimeConfig = Mapping[str, str]
NO_RUNTIME_CONFIG: RuntimeConfig = {}


def parse_runtime_config(text: str) -> dict[str, str]:
    """``--runtime-config``'s value as kube's ConfigurationMap reads it: ``key=value`` pairs separated by commas,
    a key without ``=`` mapped to "" (true)."""
    out: dict[str, str] = {}
    for part in text.split(","):
        if not part.strip():
            continue
        key, _, value = part.partition("=")
        out[key.strip()] = value.strip()
    return out


def _stability(version: str) -> str:
    return "alpha" if "alpha" in version else "beta" if "beta" in version else "ga"


def _bool(key: str, value: str) -> bool:
    if value == "" or value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(f'invalid value of {key}: {value}, err: strconv.ParseBool: parsing "{value}": invalid syntax')


def check_runtime_config(config: RuntimeConfig, minor: int) -> None:
    """ValueError worded as kube-apiserver's for a value or key Kubernetes 1.``minor`` refuses: first its option
    validation (``APIEnablementOptions.Validate`` over the schemes of kube-apiserver, apiextensions and the
    aggregator), then what merging the flag into the defaults refuses (``MergeAPIResourceConfigs``)."""
    if dict(config) == {"api/all": "false"}:
        raise ValueError("invalid runtime-config with only api/all=false")  # a server that serves nothing
    unknown: set[str] = set()
    for key in config:
        if key in _MATCHERS:
            continue
        tokens = key.split("/")
        if len(tokens) not in (2, 3):
            raise ValueError(f"runtime-config invalid key {key}")
        if _registered_versions(tokens[0], minor) is None:
            unknown.add(_group_version(tokens[0], tokens[1]))
    if unknown:
        raise ValueError(f"unknown api groups {','.join(sorted(unknown))}")
    for key, value in config.items():
        if key in _MATCHERS:
            if value not in ("true", "false"):
                raise ValueError(f"invalid value {key}={value}")
            continue
        tokens = key.split("/")
        group, version = tokens[0], tokens[1]
        registered = _registered_versions(group, minor) or ()
        if version not in registered:
            raise ValueError(f"group version {_group_version(group, version)} that has not been registered")
        _bool(key, value)
        if len(tokens) == 3 and tokens[2].lower() != tokens[2]:
            raise ValueError(
                f'invalid key {key}: group/version/resource and resource is always lowercase plural, not "{tokens[2]}"'
            )


def registered_minors(group: str, version: str) -> tuple[int, ...]:
    """The minor versions whose kube-apiserver registers ``group/version`` (what ``--runtime-config`` accepts)."""
    return tuple(m for m in MINORS if version in (REGISTERED_VERSIONS[m].get(group) or ()))


def _group_version(group: str, version: str) -> str:
    """``schema.GroupVersion.String()``: the core group's versions alone."""
    return f"{group}/{version}" if group else version


def _registered_versions(group: str, minor: int) -> tuple[str, ...] | None:
    """The versions of ``group`` Kubernetes 1.``minor`` registers; None: a group it does not have (a minor
    outside the table is read as the nearest one's)."""
    nearest = min(max(minor, MINORS[0]), MINORS[-1])
    return REGISTERED_VERSIONS[nearest].get(group)


def _default(version: str) -> bool:
    """Whether kube-apiserver serves a registered group version with no ``--runtime-config``: stable ones only."""
    return _stability(version) == "ga"


def api_enabled(group: str, version: str, plural: str, minor: int, config: RuntimeConfig = NO_RUNTIME_CONFIG) -> bool:
    """Whether ``plural`` in ``group/version`` is served by Kubernetes 1.``minor`` under ``config`` (checked
    already). The core group's v1 is always served."""
    if not group:
        return True
    registered = _registered_versions(group, minor)
    if registered is not None and version not in registered:
        return False  # the release does not have it: nothing enables it
    enabled = _default(version)
    for matcher in _MATCHERS:
        if matcher in config and (matcher == "api/all" or matcher == f"api/{_stability(version)}"):
            enabled = config[matcher] == "true"
    version_key = f"{group}/{version}"
    if version_key in config:
        enabled = _bool(version_key, config[version_key])
    resource_key = f"{group}/{version}/{plural}"
    if resource_key in config:
        enabled = _bool(resource_key, config[resource_key])
    return enabled


# The group version of the Workload API each release serves behind GenericWorkload (alpha, then beta from 1.37:
# off by default either way).
_WORKLOAD_API = {35: "v1alpha1", 36: "v1alpha2", 37: "v1beta1"}


def workload_api_note(gates: Mapping[str, bool], minor: int, config: RuntimeConfig) -> str | None:
    """One line for a run whose GenericWorkload gate is on while ``config`` leaves the Workload API's group version
    off (the gate alone serves nothing, as on kube-apiserver); None otherwise."""
    version = _WORKLOAD_API.get(minor)
    if version is None or not gates.get("GenericWorkload"):
        return None
    if api_enabled("scheduling.k8s.io", version, "workloads", minor, config):
        return None
    stability = "an alpha" if _stability(version) == "alpha" else "a beta"
    return (
        f"note: GenericWorkload is on but scheduling.k8s.io/{version} is not served ({stability} API, "
        f"off by default as on kube-apiserver): add --runtime-config scheduling.k8s.io/{version}=true to serve the "
        "Workload API"
    )

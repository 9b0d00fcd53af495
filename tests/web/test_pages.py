"""The web UI's pages and fragments, through the ASGI app (no browser)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from tests.web.conftest import HTMX, htmx, node, pod, wait_for

REPO = Path(__file__).resolve().parents[2]


def store_of(app: FastAPI) -> ClusterStore:
    store: ClusterStore = app.state.store
    return store


def mark_unschedulable(store: ClusterStore, name: str, message: str) -> None:
    current = store.get("Pod", "default", name)
    assert current is not None
    status = dict(current["status"])
    status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": message}]
    store.update_pod_status("default", name, status)


# ---------------------------------------------------------------------------------------------- navigation


async def test_root_redirects_to_the_cluster_page(client: httpx.AsyncClient) -> None:
    response = await client.get("/")
    assert response.status_code == 307
    assert response.headers["location"] == "/ui/cluster"


async def test_kubernetes_api_routes_are_not_shadowed(client: httpx.AsyncClient) -> None:
    assert (await client.get("/healthz")).status_code == 200
    assert (await client.get("/version")).json()["minor"] == "36"  # the default version, v1.36
    assert (await client.get("/api/v1/nodes")).json()["kind"] == "NodeList"


async def test_pages_load_htmx_and_the_sse_extension_from_the_pinned_local_files(client: httpx.AsyncClient) -> None:
    html = (await client.get("/ui/cluster")).text
    scripts = re.findall(r'<script src="([^"]+)"', html)
    assert scripts[:2] == ["/ui/static/vendor/htmx-2.0.11.min.js", "/ui/static/vendor/htmx-ext-sse-2.2.4.min.js"]
    for src in scripts:
        response = await client.get(src)
        assert response.status_code == 200, src
        assert len(response.content) > 1000
    assert 'sse-connect="/ui/events?resourceVersion=' in html


def test_no_template_or_static_file_refers_to_a_cdn() -> None:
    offenders = []
    for folder in (REPO / "templates", REPO / "static"):
        for file in folder.rglob("*"):
            own = file.suffix in (".html", ".css", ".js") and "vendor" not in file.parts
            if own and re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", file.read_text()):
                offenders.append(str(file))
    assert offenders == []


async def test_static_files_outside_the_static_folder_are_not_served(client: httpx.AsyncClient) -> None:
    assert (await client.get("/ui/static/../app/main.py")).status_code == 404
    assert (await client.get("/ui/static/%2e%2e/pyproject.toml")).status_code == 404


async def test_unknown_pod_and_node_get_an_html_404(client: httpx.AsyncClient) -> None:
    for path in ("/ui/pods/default/nope", "/ui/nodes/nope"):
        response = await client.get(path)
        assert response.status_code == 404
        assert "text/html" in response.headers["content-type"]
        assert "nope" in response.text


# ---------------------------------------------------------------------------------------------- cluster


async def test_cluster_page_sums_bound_pod_requests_per_node_without_the_scheduler(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store = store_of(app)
    store.create("Node", node("node-a", cpu="4", labels={"zone": "a"}))
    store.create("Node", node("node-b", cpu="2", labels={"zone": "b"}))
    store.create("Pod", pod("web-1", cpu="1500m", memory="2Gi", node_name="node-a"))
    store.create("Pod", pod("web-2", cpu="500m", memory="2Gi", node_name="node-a"))
    store.create("Pod", pod("waiting", cpu="1"))
    html = (await client.get("/ui/cluster")).text
    row = html[html.index('id="node-node-a"') :]
    row = row[: row.index("</tr>")]
    assert "2 / 4" in row  # cpu cores requested / allocatable
    assert "4Gi / 32Gi" in row
    assert "web-1" in row and "web-2" in row
    summary = html[html.index('class="summary"') : html.index("</table>") if "</table>" in html else None]
    assert re.search(r'data-testid="bound-count">2<', summary)
    assert re.search(r'data-testid="pending-count">1<', summary)
    assert "from the pods in the store" in html


async def test_cluster_search_by_label_answers_htmx_with_the_fragment_only(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store = store_of(app)
    for i in range(3):
        store.create("Node", node(f"node-{i}", labels={"zone": "b" if i == 1 else "a"}))
    response = await client.get("/ui/cluster", params={"q": "zone=b"}, headers=htmx("cluster-body"))
    assert response.text.lstrip().startswith('<section id="cluster-body"')
    assert "<html" not in response.text
    assert "node-1" in response.text and "node-0" not in response.text and "node-2" not in response.text
    by_name = await client.get("/ui/cluster", params={"q": "node-2"}, headers=htmx("cluster-body"))
    assert 'id="node-node-2"' in by_name.text and 'id="node-node-0"' not in by_name.text
    # A history restore (back button after a cache miss) wants the whole page.
    restore = await client.get("/ui/cluster", headers={**htmx("cluster-body"), "HX-History-Restore-Request": "true"})
    assert "<html" in restore.text


async def test_cluster_lists_nodes_25_at_a_time_under_an_overview_of_all(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store = store_of(app)
    for i in range(260):
        store.create("Node", node(f"n-{i:03d}"))
    html = (await client.get("/ui/cluster", params={"page": 3})).text
    names = re.findall(r'id="node-(n-\d+)"', html)
    assert names == [f"n-{i:03d}" for i in range(50, 75)]
    assert "51–75 of 260" in html
    assert len(re.findall(r'<a href="/ui/nodes/n-\d+" class="h0"', html)) == 260  # every node in the overview
    last = (await client.get("/ui/cluster", params={"page": 99})).text  # clamped to the last page
    assert re.findall(r'id="node-(n-\d+)"', last) == [f"n-{i:03d}" for i in range(250, 260)]


async def test_cluster_sort_by_cpu_puts_the_busiest_node_first(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = store_of(app)
    for name in ("a", "b", "c"):
        store.create("Node", node(name))
    store.create("Pod", pod("big", cpu="3", node_name="b"))
    store.create("Pod", pod("small", cpu="1", node_name="c"))
    html = (await client.get("/ui/cluster", params={"sort": "cpu"})).text
    assert re.findall(r'id="node-(\w)"', html) == ["b", "c", "a"]


async def test_cluster_uses_the_scheduler_cache_when_the_scheduler_runs(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    store = store_of(sched_app)
    store.create("Node", node("solo", cpu="4"))
    store.create("Pod", pod("p1", cpu="1"))
    wait_for(lambda: (store.get("Pod", "default", "p1") or {}).get("spec", {}).get("nodeName"))
    wait_for(lambda: _pods_in_scheduler_cache(sched_app) == 1)
    html = (await sched_client.get("/ui/cluster")).text
    assert "from the scheduler cache" in html
    assert "1 / 4" in html


# ---------------------------------------------------------------------------------------------- pods


async def test_pods_page_shows_the_pending_reason_and_filters_pending(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = store_of(app)
    store.create("Node", node("n1"))
    store.create("Pod", pod("bound-one", node_name="n1"))
    store.create("Pod", pod("stuck"))
    mark_unschedulable(store, "stuck", "0/1 nodes are available: 1 Insufficient cpu.")
    html = (await client.get("/ui/pods")).text
    assert "bound-one" in html and "stuck" in html
    assert "0/1 nodes are available: 1 Insufficient cpu." in html
    pending = await client.get("/ui/pods", params={"state": "pending"}, headers=htmx("pod-table"))
    assert pending.text.lstrip().startswith('<section id="pod-table"')
    assert "stuck" in pending.text and "bound-one" not in pending.text
    on_node = (await client.get("/ui/pods", params={"node": "n1"}, headers=htmx("pod-table"))).text
    assert "bound-one" in on_node and ">stuck<" not in on_node


async def test_pods_search_namespace_filter_sort_and_paging(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = store_of(app)
    for i in range(120):
        store.create("Pod", pod(f"api-{i:03d}", labels={"tier": "api" if i % 2 else "batch"}))
    store.create("Pod", pod("other", namespace="team-b"))
    html = (await client.get("/ui/pods", params={"q": "tier=api", "page": 1})).text
    shown = re.findall(r'data-pod="default/(api-\d+)"', html)
    assert len(shown) == 60 and all(int(n[-3:]) % 2 for n in shown)
    page2 = (await client.get("/ui/pods", params={"page": 2}, headers=htmx("pod-table"))).text
    expected = [f"default/api-{i}" for i in range(100, 120)] + ["team-b/other"]
    assert re.findall(r'data-pod="([\w/-]+)"', page2) == expected
    team = (await client.get("/ui/pods", params={"namespace": "team-b"}, headers=htmx("pod-table"))).text
    assert re.findall(r'data-pod="([\w/-]+)"', team) == ["team-b/other"]
    desc = (await client.get("/ui/pods", params={"sort": "name", "desc": "true"}, headers=htmx("pod-table"))).text
    assert re.findall(r'data-pod="([\w/-]+)"', desc)[:2] == ["team-b/other", "default/api-119"]


async def test_pods_sort_by_priority(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = store_of(app)
    store.create(
        "PriorityClass",
        {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000},
    )
    store.create("Pod", pod("low"))
    store.create("Pod", pod("vip", priority_class="high"))
    html = (await client.get("/ui/pods", params={"sort": "priority", "desc": "true"})).text
    assert re.findall(r'data-pod="default/(\w+)"', html) == ["vip", "low"]


# ---------------------------------------------------------------------------------------------- pod detail


async def test_pod_page_shows_filter_matrix_scores_and_selected_node(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    store = store_of(sched_app)
    store.create("Node", node("big", cpu="8"))
    store.create("Node", node("small", cpu="1"))
    store.create("Node", node("tainted", cpu="8", taints=[{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]))
    store.create("Pod", pod("web", cpu="2"))
    wait_for(lambda: (store.get("Pod", "default", "web") or {}).get("spec", {}).get("nodeName"))
    html = (await sched_client.get("/ui/pods/default/web")).text
    assert 'data-testid="pod-node">big<' in html
    matrix = html[html.index('data-testid="filter-matrix"') : html.index('data-testid="score-table"')]
    # small fails NodeResourcesFit, tainted fails TaintToleration; both marked where the loop stopped.
    assert "Insufficient cpu" in matrix
    assert "untolerated taint" in matrix
    assert matrix.count("cell fail stopped") == 2
    scores = html[html.index('data-testid="score-table"') : html.index('data-testid="heatmap"')]
    assert "×3" in scores  # TaintToleration's weight is shown
    assert re.search(r'<tr class="selected">\s*<td class="node"><a href="/ui/nodes/big">', scores)
    assert 'data-testid="plugin-bars"' in html
    # The matrices alone, filtered to one node, for the controls' htmx requests.
    fragment = await sched_client.get(
        "/ui/pods/default/web", params={"attempt": 1, "fnode": "tain"}, headers=htmx("matrices")
    )
    assert fragment.text.lstrip().startswith('<div id="matrices"')
    assert "/ui/nodes/tainted" in fragment.text and "/ui/nodes/small" not in fragment.text
    rejected = await sched_client.get(
        "/ui/pods/default/web", params={"fplugin": "NodeResourcesFit"}, headers=htmx("matrices")
    )
    rows = rejected.text[: rejected.text.index('data-testid="score-table"')]
    assert "/ui/nodes/small" in rows and "/ui/nodes/tainted" not in rows


async def test_pod_page_of_an_unschedulable_pod_shows_postfilter(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    store = store_of(sched_app)
    store.create("Node", node("tiny", cpu="1"))
    store.create("Pod", pod("huge", cpu="64"))
    sched_app.state.results.flush()
    wait_for(lambda: sched_app.state.results.list_attempts("default", "huge"))
    html = (await sched_client.get("/ui/pods/default/huge")).text
    assert "0/1 nodes are available: 1 Insufficient cpu." in html
    postfilter = html[html.index("<th>PostFilter</th>") :]
    assert "Preemption is not helpful for scheduling" in postfilter[: postfilter.index("</tr>")]
    assert "No node was scored in this attempt" in html


async def test_pod_page_live_fragment_and_elided_annotations(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = store_of(app)
    body = pod("annotated")
    body["metadata"]["annotations"] = {"long": "x" * 5000, "short": "ok"}
    store.create("Pod", body)
    html = (await client.get("/ui/pods/default/annotated")).text
    assert "5,000 characters, elided" in html and "x" * 400 not in html
    assert "No attempt recorded (the scheduler is not running in this server)" in html
    live = await client.get("/ui/pods/default/annotated", headers=htmx("pod-live"))
    assert live.text.lstrip().startswith('<section id="pod-live"')
    assert "sse:pod[kssTouches(detail, 'default/annotated')]" in live.text
    editor = (await client.get("/ui/edit/Pod/annotated", params={"namespace": "default"})).text
    assert "x" * 5000 in editor  # the editor keeps every byte, so saving does not truncate


# ---------------------------------------------------------------------------------------------- editor


NODE_YAML = """apiVersion: v1
kind: Node
metadata:
  name: made-in-ui
status:
  capacity: {cpu: "4", memory: 32Gi, pods: "110"}
"""


async def test_editor_offers_templates_for_every_kind(client: httpx.AsyncClient) -> None:
    html = (await client.get("/ui/new", params={"kind": "Node"})).text
    assert "cpu: &#34;4&#34;" in html and "memory: 32Gi" in html
    pod_template = await client.get("/ui/new", params={"kind": "Pod"}, headers=htmx("editor"))
    assert pod_template.text.lstrip().startswith('<form id="editor"')
    assert "requests:" in pod_template.text
    for kind in (
        "Namespace",
        "PriorityClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "PodDisruptionBudget",
        "CSINode",
        "Event",
    ):
        assert f"kind: {kind}" in (await client.get("/ui/new", params={"kind": kind})).text


async def test_every_template_is_accepted_by_the_store(app: FastAPI, client: httpx.AsyncClient) -> None:
    from kss_sim.web.views.editor import TEMPLATES

    store = store_of(app)
    for kind in (
        "Namespace",
        "Node",
        "Pod",
        "PriorityClass",
        "StorageClass",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "PodDisruptionBudget",
        "CSINode",
        "Event",
    ):
        response = await client.post("/ui/objects", data={"yaml": TEMPLATES[kind]}, headers=HTMX)
        assert response.headers.get("hx-redirect"), (kind, response.text[:500])
        assert store.select(kind).items, kind


async def test_editor_creates_an_object_and_redirects_to_it(app: FastAPI, client: httpx.AsyncClient) -> None:
    response = await client.post("/ui/objects", data={"yaml": NODE_YAML}, headers=HTMX)
    assert response.headers["hx-redirect"] == "/ui/nodes/made-in-ui"
    assert store_of(app).get("Node", None, "made-in-ui") is not None
    plain = await client.post("/ui/objects", data={"yaml": NODE_YAML.replace("made-in-ui", "second")})
    assert plain.status_code == 303 and plain.headers["location"] == "/ui/nodes/second"


async def test_editor_errors_are_shown_inline_and_nothing_is_saved(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = store_of(app)
    before = store.resource_version
    cases = {
        "kind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: c, image: nginx}]}": "metadata.name",
        "kind: Pod\nmetadata: {name: ok}\nspec: {containers: []}": "spec.containers",
        "kind: Node\nmetadata:\n  name: [unclosed": "could not be parsed",
        "kind: Gadget\nmetadata: {name: g}": "Unsupported value",
        "metadata: {name: nokind}": "every object needs a kind",
        NODE_YAML + "---\n" + NODE_YAML: "submit one object at a time",
        "": "the document is empty",
    }
    for text, expected in cases.items():
        response = await client.post("/ui/objects", data={"yaml": text}, headers=HTMX)
        assert response.status_code == 200  # htmx swaps 2xx only
        assert 'data-testid="editor-error"' in response.text, text
        assert expected in response.text, (text, response.text[:800])
        assert "Nothing was saved." in response.text
        assert f">{text}</textarea>" in response.text.replace("&#34;", '"').replace("&#39;", "'") or not text
    assert store.resource_version == before
    plain = await client.post("/ui/objects", data={"yaml": "kind: Pod\nmetadata: {name: x}\nspec: {}"})
    assert plain.status_code == 422 and "<html" in plain.text


async def test_editing_replaces_the_object_and_refuses_a_different_one(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = store_of(app)
    store.create("Node", node("edit-me", labels={"team": "a"}))
    text = (await client.get("/ui/edit/Node/edit-me")).text
    assert "team: a" in text and 'name="target_name" value="edit-me"' in text
    current = store.get("Node", None, "edit-me")
    assert current is not None
    yaml_text = NODE_YAML.replace("made-in-ui", "edit-me").replace("status:", "  labels: {team: b}\nstatus:")
    target = {"target_kind": "Node", "target_name": "edit-me"}
    saved = await client.post("/ui/objects", data={"yaml": yaml_text, **target}, headers=HTMX)
    assert saved.headers["hx-redirect"] == "/ui/nodes/edit-me"
    assert store.get("Node", None, "edit-me")["metadata"]["labels"] == {"team": "b"}  # type: ignore[index]
    other = await client.post("/ui/objects", data={"yaml": NODE_YAML, **target}, headers=HTMX)
    assert "is not the one being edited" in other.text
    assert store.get("Node", None, "made-in-ui") is None
    version = current["metadata"]["resourceVersion"]
    stale = yaml_text.replace("metadata:", f'metadata:\n  resourceVersion: "{version}"')
    conflict = await client.post("/ui/objects", data={"yaml": stale, **target}, headers=HTMX)
    assert "Conflict" in conflict.text and "the object has been modified" in conflict.text


async def test_delete_asks_htmx_to_go_to_the_list(app: FastAPI, client: httpx.AsyncClient) -> None:
    store = store_of(app)
    store.create("Pod", pod("doomed"))
    response = await client.delete("/ui/objects/Pod/doomed", params={"namespace": "default"}, headers=HTMX)
    assert response.headers["hx-redirect"] == "/ui/pods"
    assert store.get("Pod", "default", "doomed") is None
    again = await client.delete("/ui/objects/Pod/doomed", params={"namespace": "default"}, headers=HTMX)
    assert "NotFound" in again.text
    builtin = await client.delete("/ui/objects/Namespace/default", headers=HTMX)
    assert "Forbidden" in builtin.text and store.get("Namespace", None, "default") is not None


async def test_objects_page_lists_any_kind(app: FastAPI, client: httpx.AsyncClient) -> None:
    html = (await client.get("/ui/objects", params={"kind": "PriorityClass"})).text
    assert "system-node-critical" in html and "system-cluster-critical" in html
    assert 'hx-trigger="sse:priorityclass"' in html


# ---------------------------------------------------------------------------------------------- scheduler config

MOST_ALLOCATED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""


async def test_scheduler_page_shows_and_applies_the_configuration(app: FastAPI, client: httpx.AsyncClient) -> None:
    html = (await client.get("/ui/scheduler")).text
    assert "kind: KubeSchedulerConfiguration" in html
    applied = await client.post("/ui/scheduler", data={"config": MOST_ALLOCATED}, headers=HTMX)
    assert 'data-testid="config-applied"' in applied.text
    assert "MostAllocated" in str(app.state.scheduler.config_document())
    assert "MostAllocated" in (await client.get("/ui/scheduler")).text


def in_effect_row(html: str, point: str) -> str:
    """The plugins cell of one extension point in the "In effect" table, tags stripped."""
    match = re.search(rf'<tr data-point="{point}">\s*<th scope="row">{point}</th>\s*<td>(.*?)</td>', html, re.S)
    assert match, f"no {point} row"
    return re.sub(r"<[^>]+>", "", match.group(1))


async def test_scheduler_page_shows_the_plugins_in_effect_and_follows_a_new_configuration(
    client: httpx.AsyncClient,
) -> None:
    html = (await client.get("/ui/scheduler")).text
    assert 'data-testid="plugins-in-effect"' in html and "hx-swap-oob" not in html
    assert in_effect_row(html, "score").startswith("TaintToleration ×3, NodeAffinity ×2, NodeResourcesFit ×1")
    assert in_effect_row(html, "queueSort") == "PrioritySort"
    assert in_effect_row(html, "permit") == "none"
    assert "kind: NodeResourcesFitArgs" in html and "type: LeastAllocated" in html
    custom = MOST_ALLOCATED + "  plugins:\n    score:\n      disabled: [{name: ImageLocality}]\n"
    applied = (await client.post("/ui/scheduler", data={"config": custom}, headers=HTMX)).text
    # The form answers for itself; the plugins in effect come along out of band, already the new ones.
    assert 'data-testid="config-applied"' in applied
    assert (
        '<section id="plugins-in-effect" class="card in-effect" data-testid="plugins-in-effect" hx-swap-oob="true">'
        in applied
    )
    assert "ImageLocality" not in in_effect_row(applied, "score")
    assert "type: MostAllocated" in applied
    refused = (await client.post("/ui/scheduler", data={"config": "profiles: [\n"}, headers=HTMX)).text
    assert "ImageLocality" not in in_effect_row(refused, "score"), "still the running configuration"


async def test_invalid_scheduler_configuration_names_the_field_and_changes_nothing(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    running = app.state.scheduler.config_document()
    bad = MOST_ALLOCATED.replace("MostAllocated", "Sideways")
    response = await client.post("/ui/scheduler", data={"config": bad}, headers=HTMX)
    assert 'data-testid="config-error"' in response.text
    assert "scoringStrategy" in response.text
    assert app.state.scheduler.config_document() == running
    unknown = await client.post("/ui/scheduler", data={"config": "kind: KubeSchedulerConfiguration\nbogus: 1\n"})
    assert unknown.status_code == 422 and "<code>bogus</code>" in unknown.text
    broken = await client.post("/ui/scheduler", data={"config": "profiles: [\n"}, headers=HTMX)
    assert "invalid YAML" in broken.text
    assert app.state.scheduler.config_document() == running


# ---------------------------------------------------------------------------------------------- operations


async def test_operations_page_offers_export_import_and_reset(app: FastAPI, client: httpx.AsyncClient) -> None:
    html = (await client.get("/ui/operations")).text
    assert "Export YAML" in html and "Reset cluster" in html
    store_of(app).create("Node", node("exported"))
    export = await client.get("/ui/operations/export", params={"format": "yaml"})
    assert export.status_code == 200 and "exported" in export.text
    assert "attachment" in export.headers["content-disposition"]
    bad_file = b"kind: Pod\nmetadata: {name: Bad_Name}\n"
    bad = await client.post("/ui/operations/import", files={"file": ("x.yaml", bad_file)})
    assert bad.status_code == 422 and "Nothing was imported" in bad.text
    store_of(app).delete("Node", None, "exported")
    good = await client.post("/ui/operations/import", files={"file": ("x.yaml", export.content)})
    assert good.status_code == 200 and "Imported" in good.text
    assert store_of(app).get("Node", None, "exported") is not None
    reset = await client.post("/ui/operations/reset", headers=HTMX)
    assert reset.headers["hx-redirect"] == "/ui/cluster"
    assert store_of(app).get("Node", None, "exported") is None


def test_bars_write_used_and_total_as_kss_sim_figures_does() -> None:
    from kss_sim.web.formatting import make_bar

    memory = make_bar("memory", 1536 * 2**20, 32 * 2**30)
    assert (memory.used_text, memory.total_text) == ("1.5Gi", "32Gi")  # one scale, not kubectl's "1536Mi"
    cpu = make_bar("cpu", 1500, 4000)
    assert (cpu.used_text, cpu.total_text) == ("1500m", "4")
    assert make_bar("nvidia.com/gpu", 3, 8).used_text == "3"


async def test_a_pod_deleted_gracefully_shows_terminating_while_it_keeps_its_node(client: httpx.AsyncClient) -> None:
    # No kubelet in this app: the pod stays terminating, still counted on its node.
    assert (await client.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    assert (await client.post("/api/v1/namespaces/default/pods", json=pod("going", node_name="n1"))).status_code == 201
    assert (await client.delete("/api/v1/namespaces/default/pods/going")).status_code == 200
    node_page = (await client.get("/ui/nodes/n1")).text
    assert re.search(r'<a href="/ui/pods/default/going">default/going</a></td><td>Terminating</td>', node_page)
    listing = (await client.get("/ui/pods")).text
    assert re.search(r'<span class="badge ok">Bound</span>\s*<span class="muted">Terminating</span>', listing)
    assert '<span class="badge warn">Terminating</span>' in (await client.get("/ui/pods/default/going")).text


def _pods_in_scheduler_cache(app: FastAPI) -> int:
    """Pods on the nodes of the scheduler's cache, read through the pages' view (either scheduler host)."""
    return sum(allocation.pod_count for allocation in app.state.scheduler_view.node_allocations().values())

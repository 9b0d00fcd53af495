"""What every HTML route uses: the templates and their environment, the htmx target of a request, the request's
``WebService`` and the context every page shares (``kss_sim.web.router``, ``kss_sim.web.dra_routes``,
``kss_sim.web.runs_routes``).
"""

from __future__ import annotations

import functools
import hashlib
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from fastapi import Request
from fastapi.responses import HTMLResponse
from markupsafe import Markup, escape

from kss_sim import figures
from kss_sim.cluster.kinds.registry import KINDS
from kss_sim.config import Settings
from kss_sim.package_data import STATIC_DIR, TEMPLATES_DIR
from kss_sim.web.formatting import age, duration_text
from kss_sim.web.page_sources import WebCaches, WebService
from kss_sim.web.ports import Operations, Results, SchedulerView, Store
from kss_sim.web.views.pod import status_ok
from kss_sim.web.views.runs import percent, wait_text

if TYPE_CHECKING:
    import jinja2


def _query(params: dict[str, Any], **changes: Any) -> str:
    """``?a=1&b=2`` from ``params`` with ``changes`` applied; empty values and page 1 are left out."""
    merged = {**params, **changes}
    pairs = [(k, v) for k, v in merged.items() if v not in (None, "", False) and not (k.endswith("page") and v == 1)]
    return "?" + urlencode(pairs) if pairs else "?"


_STATIC_HASHES: dict[tuple[str, float], str] = {}


def _static_url(path: str) -> str:
    """``/ui/static/<path>?v=<content hash>`` so browsers refetch hand-written files when they change."""
    file = STATIC_DIR / path
    try:
        key = (path, file.stat().st_mtime)
        digest = _STATIC_HASHES.get(key)
        if digest is None:
            digest = _STATIC_HASHES[key] = hashlib.sha256(file.read_bytes()).hexdigest()[:10]
    except OSError:
        return f"/ui/static/{path}"
    return f"/ui/static/{path}?v={digest}"


def _camel_wrap(name: str) -> Markup:
    """``NodeResourcesFit`` with break opportunities between its words, for narrow column headers."""
    return Markup("<wbr>").join(escape(part) for part in re.split(r"(?<=[a-z])(?=[A-Z])", name))


_EXTENDER = re.compile(r"Extender\((?P<url>.*)\)")


def _extender_address(name: str) -> str | None:
    """The host:port of an extender's record name (``Extender(<urlPrefix>)``); None for a plugin's name."""
    match = _EXTENDER.fullmatch(name)
    if match is None:
        return None
    return urlsplit(match["url"]).netloc or match["url"]


def _plugin_header(name: str) -> Markup:
    """A matrix column's header: a plugin's name with break opportunities, an extender as "Extender" over its
    address (its full ``Extender(<urlPrefix>)`` would make its column the widest; the header's title keeps it)."""
    address = _extender_address(name)
    if address is None:
        return _camel_wrap(name)
    return Markup('Extender <span class="address">{}</span>').format(address)


def _plugin_short(name: str) -> str:
    """A plugin's name, or ``Extender <host:port>`` for an extender's, in one line of text."""
    address = _extender_address(name)
    return name if address is None else f"Extender {address}"


@functools.cache
def environment() -> jinja2.Environment:
    """The templates' environment, built for the first page: jinja2 costs ~50 ms of every server's start, and a
    server driven through its API alone never renders one."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES_DIR),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["cpu"] = figures.cpu
    env.filters["bytes"] = figures.byte_size
    env.filters["age"] = age
    env.filters["wrap"] = _camel_wrap
    env.filters["plugin_header"] = _plugin_header
    env.filters["plugin_short"] = _plugin_short
    env.filters["duration"] = duration_text
    env.filters["wait"] = wait_text  # the Runs pages' (kss_sim.web.runs_routes)
    env.filters["percent"] = percent
    env.tests["status_ok"] = status_ok
    env.globals["query"] = _query
    env.globals["static"] = _static_url
    env.globals["kinds"] = KINDS
    return env


def render(
    template: str, status_code: int = 200, headers: dict[str, str] | None = None, **context: Any
) -> HTMLResponse:
    """Render one template (a page or a partial) to a response."""
    html = environment().get_template(template).render(**context)
    return HTMLResponse(html, status_code=status_code, headers=headers)


def is_htmx(request: Request) -> bool:
    """An htmx request that wants a fragment (a history restore wants the whole page)."""
    return request.headers.get("hx-request") == "true" and request.headers.get("hx-history-restore-request") != "true"


def hx_target(request: Request) -> str:
    """The id of the element an htmx request will swap."""
    return request.headers.get("hx-target", "") if is_htmx(request) else ""


def web(request: Request) -> WebService:
    """A ``WebService`` over the services on ``app.state``; its caches (``state.web_caches``) outlive the request."""
    state = request.app.state
    store: Store = state.store
    results: Results = state.results
    scheduler: SchedulerView = state.scheduler_view
    operations: Operations | None = getattr(state, "operations", None)
    settings: Settings = state.settings
    caches: WebCaches | None = getattr(state, "web_caches", None)
    if caches is None:
        caches = state.web_caches = WebCaches.over(scheduler)
    return WebService(
        store=store,
        results=results,
        scheduler=scheduler,
        operations=operations,
        scheduler_running=settings.scheduler_enabled,
        caches=caches,
    )


def base_context(request: Request, service: WebService, rv: int, active: str) -> dict[str, Any]:
    """What every page's template reads: the request, the resourceVersion shown, the active tab, what runs and at
    which Kubernetes release."""
    settings: Settings = request.app.state.settings
    return {
        "request": request,
        "kube_version": settings.version.git_version,
        # A version kss is not measured at says so beside it (None: measured).
        "kube_version_unmeasured": None if settings.version.measured else settings.version.fidelity,
        "rv": rv,
        "active": active,
        "has_operations": service.operations is not None,
        "scheduler_running": service.scheduler_running,
        "out_of_tree": service.scheduler.out_of_tree_plugins(),  # users' plugins, marked where plugins are named
        "plugin_timeouts": service.scheduler.plugin_timeouts(),  # runaway plugins, named in a banner
    }


def not_found(request: Request, service: WebService, what: str) -> HTMLResponse:
    """The 404 page for ``what`` (``node "a"``, ``pod "ns/name"``, ...)."""
    ctx = base_context(request, service, service.store.resource_version, "")
    return render("pages/not_found.html", 404, what=what, **ctx)

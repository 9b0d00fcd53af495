"""The UI in headless Chromium at 5,000 nodes / 50,000 pods: the cluster, pods and pod pages; server, load, paint.

Usage: ``.venv/bin/python bench/ui_browser.py [--nodes 5000] [--pods 50000] [--pending 5000] [--runs 5]``.
The store is built as ``bench/ui_render.py`` builds it (memory only; a scheduler service takes it in and records
two probe pods' 5,000-node attempts through the results service, as ``kss serve`` does) and served by uvicorn in
this process; Chromium (Debian's, at /usr/bin/chromium, driven by Playwright)
opens each page ``--runs`` times in a fresh context (nothing cached) and reports the medians of: the server's
answer (navigation timing's request start to response end), first contentful paint, and the load event, both
from navigation start, plus ``page.goto`` to the load event as the test harness sees it and the HTML's size.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx
import uvicorn

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from bench._serve import free_port  # noqa: E402
from bench.ui_render import FITS, PROBE_NAMESPACE, TOO_BIG, build_store, record_attempts  # noqa: E402
from kss_sim.config import Settings  # noqa: E402
from kss_sim.engine_host.view import EngineView  # noqa: E402
from kss_sim.main import create_app  # noqa: E402

CHROMIUM = "/usr/bin/chromium"
PAGES = (
    ("/ui/cluster", "cluster page (overview of every node + 25 rows)"),
    ("/ui/cluster?resource=nvidia.com/gpu&sort=allocated", "coloured by an extended resource, busiest first"),
    ("/ui/cluster?q=zone-7", "search (500 nodes)"),
    ("/ui/pods", "pods page (pending first)"),
    (f"/ui/pods/{PROBE_NAMESPACE}/{TOO_BIG}", "pod page: every node rejected (latest attempt)"),
    (f"/ui/pods/{PROBE_NAMESPACE}/{FITS}", "pod page: placed, every node filtered and scored"),
    (f"/ui/pods/{PROBE_NAMESPACE}/{TOO_BIG}?attempt=1&fpage=60", "pod page: an earlier attempt, a later matrix page"),
    (f"/ui/edit/Pod/{FITS}?namespace={PROBE_NAMESPACE}", "editor of the placed pod (its annotations)"),
)
TIMING = """() => {
  const nav = performance.getEntriesByType("navigation")[0];
  const paint = performance.getEntriesByName("first-contentful-paint")[0];
  return {server: nav.responseEnd - nav.requestStart, load: nav.loadEventEnd, fcp: paint ? paint.startTime : NaN,
          bytes: nav.transferSize || nav.encodedBodySize, cells: document.querySelectorAll(".cells a").length};
}"""


def measure(url: str, runs: int) -> None:
    """Open each page ``runs`` times in fresh contexts; print the medians."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for path, label in PAGES:
            figures: list[dict[str, float]] = []
            for _ in range(runs):
                context = browser.new_context(viewport={"width": 1440, "height": 900})
                page = context.new_page()
                start = time.perf_counter()
                page.goto(url + path, wait_until="load")
                goto_ms = (time.perf_counter() - start) * 1000
                page.wait_for_function("performance.getEntriesByType('navigation')[0].loadEventEnd > 0")
                figures.append({**page.evaluate(TIMING), "goto": goto_ms})
                context.close()

            def median(key: str, figures: list[dict[str, float]] = figures) -> float:
                return statistics.median(f[key] for f in figures)

            print(
                f"  {label:<50} server {median('server'):6.0f} ms  first paint {median('fcp'):6.0f} ms  "
                f"load {median('load'):6.0f} ms  goto {median('goto'):6.0f} ms  "
                f"{median('bytes') / 1024:5.0f} KiB  {int(median('cells')):,} cells"
            )
        browser.close()


async def run(args: argparse.Namespace, tmp: Path) -> None:
    """Build the store, serve it with the big store swapped in (the lifespan's own is empty), measure."""
    start = time.perf_counter()
    store = build_store(args.nodes, args.pods, args.pending)
    built = time.perf_counter() - start
    print(f"store: {args.nodes:,} nodes, {args.pods:,} pods ({args.pending:,} pending) built in {built:.1f} s")
    app = create_app(Settings(database_url=f"sqlite:///{tmp / 'kss.db'}", scheduler_enabled=True))
    async with app.router.lifespan_context(app):
        app.state.store = store
        start = time.perf_counter()
        scheduler = record_attempts(store, app.state.results)
        print(f"scheduler started and probe pods recorded in {time.perf_counter() - start:.1f} s")
        app.state.scheduler = scheduler
        app.state.scheduler_view = EngineView(scheduler)
        port = free_port()
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off"))
        serving = asyncio.create_task(server.serve())
        while not server.started:
            await asyncio.sleep(0.05)
        url = f"http://127.0.0.1:{port}"
        # kss serve builds the pages' pod index at start (kss_sim.main's lifespan); here the store came after it.
        start = time.perf_counter()
        await asyncio.to_thread(app.state.web_caches.pod_index.get, store)
        print(f"pod index built (kss serve does this at start): {(time.perf_counter() - start) * 1000:.0f} ms")
        async with httpx.AsyncClient(timeout=120) as client:
            start = time.perf_counter()
            await client.get(f"{url}/ui/cluster")
            print(f"first request: {(time.perf_counter() - start) * 1000:.0f} ms")
        print(f"Chromium, median of {args.runs} fresh loads each:")
        await asyncio.to_thread(measure, url, args.runs)  # Playwright's sync API blocks: off the server's loop
        server.should_exit = True
        await serving
        scheduler.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--pending", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()

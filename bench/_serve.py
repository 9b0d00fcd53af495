"""Shared helpers of the server-path benchmarks: a real ``kss serve`` subprocess, its memory, latency figures."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
WORKLOADS = REPO.parent / "shared" / "workloads"
KSS = Path(sys.executable).with_name("kss")


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Served:
    """A running ``kss serve`` and where its database lives."""

    process: subprocess.Popen[bytes]
    url: str
    db: Path
    log: Path

    def peak_rss_mb(self) -> float:
        """Peak resident set size of the server so far (``VmHWM``), in MB; read before it exits."""
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
        return float("nan")

    def cpu_seconds(self) -> float:
        """User + system CPU time the server used so far (its own process)."""
        return _cpu_of(self.process.pid)

    def children_peak_rss_mb(self) -> float:
        """Peak resident set size of the server's live child processes together (``VmHWM``), in MB."""
        return self._children_status_mb("VmHWM:")

    def children_rss_mb(self) -> float:
        """Resident set size of the server's live child processes together now (``VmRSS``), in MB."""
        return self._children_status_mb("VmRSS:")

    def _children_status_mb(self, field: str) -> float:
        total = 0.0
        with contextlib.suppress(FileNotFoundError):
            for task in Path(f"/proc/{self.process.pid}/task").iterdir():
                for pid in (task / "children").read_text().split():
                    with contextlib.suppress(FileNotFoundError):
                        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                            if line.startswith(field):
                                total += int(line.split()[1]) / 1024.0
        return total

    def child_pids(self) -> list[int]:
        """The server's live child processes (the scheduler's, KSS_SCHEDULER_PROCESS)."""
        pids: list[int] = []
        with contextlib.suppress(FileNotFoundError):
            for task in Path(f"/proc/{self.process.pid}/task").iterdir():
                with contextlib.suppress(FileNotFoundError):
                    pids += [int(pid) for pid in (task / "children").read_text().split()]
        return pids

    def children_cpu_seconds(self) -> float:
        """User + system CPU time of the server's live child processes (the scheduler's, KSS_SCHEDULER_PROCESS)."""
        total = 0.0
        for pid in self.child_pids():
            with contextlib.suppress(FileNotFoundError):
                total += _cpu_of(pid)
        return total

    def db_size_mb(self) -> float:
        """The SQLite file plus its WAL, in MB."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            p = Path(str(self.db) + suffix)
            if p.exists():
                total += p.stat().st_size
        return total / 1e6

    def stop(self) -> None:
        """SIGTERM, then wait (SIGKILL after 30 s)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start(workdir: Path, env: dict[str, str] | None = None) -> Served:
    """Start ``kss serve`` on a free port with a fresh SQLite file in ``workdir``; wait until it answers."""
    port = free_port()
    db = workdir / "kss.db"
    log = workdir / "kss.log"
    environ = {**os.environ, "KSS_DATABASE_URL": f"sqlite:///{db}", "KSS_PORT": str(port), **(env or {})}
    handle = log.open("wb")
    proc = subprocess.Popen([str(KSS), "serve"], env=environ, stdout=handle, stderr=subprocess.STDOUT, cwd=workdir)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"kss serve exited:\n{log.read_text()}")
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return Served(proc, url, db, log)
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"kss serve did not start:\n{log.read_text()}")


def percentile(sorted_values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of already sorted values, nearest rank."""
    if not sorted_values:
        return float("nan")
    idx = min(len(sorted_values) - 1, max(0, round(q * len(sorted_values) + 0.5) - 1))
    return sorted_values[idx]


def latency_line(latencies: list[float]) -> str:
    """p50/p95/p99/max of latencies given in seconds, printed in ms."""
    s = sorted(latencies)
    return (
        f"p50 {percentile(s, 0.50) * 1e3:.1f} ms, p95 {percentile(s, 0.95) * 1e3:.1f} ms, "
        f"p99 {percentile(s, 0.99) * 1e3:.1f} ms, max {(s[-1] if s else float('nan')) * 1e3:.1f} ms"
    )


class RawClient:
    """A minimal HTTP/1.1 keep-alive client on asyncio streams: the load generator must cost far less CPU than
    the server it measures (httpx spends ~5 ms of CPU per request with 50 clients on this machine)."""

    def __init__(self, url: str) -> None:
        rest = url.split("://", 1)[1]
        host, _, port = rest.partition(":")
        self.host, self.port = host, int(port or 80)
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        if self._reader is None or self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self.host, self.port)
        return self._reader, self._writer

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        """Send one request, return (status, body); the connection is reopened when the server closed it."""
        reader, writer = await self._connect()
        head = (
            f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        try:
            writer.write(head.encode() + body)
            status_line = await reader.readline()
            if not status_line:
                raise ConnectionError("connection closed")
            status = int(status_line.split()[1])
            length = 0
            close = False
            while True:
                line = await reader.readline()
                if line in (b"\r\n", b""):
                    break
                name, _, value = line.decode("latin-1").partition(":")
                name = name.strip().lower()
                if name == "content-length":
                    length = int(value)
                elif name == "connection" and value.strip().lower() == "close":
                    close = True
            payload = await reader.readexactly(length) if length else b""
        except BaseException:
            await self.close()
            raise
        if close:
            await self.close()
        return status, payload

    async def close(self) -> None:
        """Close the connection (a later request opens a new one)."""
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        self._reader = self._writer = None


async def post_all(url: str, bodies: list[tuple[str, bytes]], concurrency: int) -> list[float]:
    """POST every (path, body), ``concurrency`` requests in flight, taking them in order; returns the latencies.
    Anything but 201 stops the benchmark."""
    latencies: list[float] = []
    next_index = [0]

    async def worker() -> None:
        client = RawClient(url)
        try:
            while next_index[0] < len(bodies):
                path, body = bodies[next_index[0]]
                next_index[0] += 1
                t0 = time.perf_counter()
                status, payload = await client.request("POST", path, body)
                latencies.append(time.perf_counter() - t0)
                if status != 201:
                    raise SystemExit(f"POST {path}: {status} {payload[:300]!r}")
        finally:
            await client.close()

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies


def thread_cpu(pid: int) -> dict[int, float]:
    """CPU seconds (user + system) of each live thread of process ``pid``, by thread id."""
    ticks = os.sysconf("SC_CLK_TCK")
    result: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        result[int(task.name)] = (int(fields[11]) + int(fields[12])) / ticks
    return result


def machine_busy_seconds() -> float:
    """CPU seconds every core of the machine has spent busy since boot (all but idle and iowait, /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


class Profiler:
    """py-spy attached to the server (GIL holder and every thread), and each thread's CPU over the same span."""

    def __init__(self, pid: int, out: Path) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self._pid, self._out = pid, out
        spy = str(Path(sys.executable).with_name("py-spy"))
        common = ["record", "--format", "raw", "--threads", "--nonblocking", "--rate", "100", "--pid", str(pid)]
        self._spies = [
            subprocess.Popen([spy, *common, "--gil", "-o", str(out / "gil.txt")], stdout=subprocess.DEVNULL),
            subprocess.Popen([spy, *common, "--idle", "-o", str(out / "all.txt")], stdout=subprocess.DEVNULL),
        ]
        time.sleep(1.0)  # both attached before the load starts
        self._cpu0 = thread_cpu(pid)
        self._t0 = time.perf_counter()

    def stop(self, process_cpu: float) -> None:
        """Stop sampling; write each thread's CPU seconds over the span (and the process's) to threads.json."""
        cpu1 = thread_cpu(self._pid)
        wall = time.perf_counter() - self._t0
        for spy in self._spies:
            spy.send_signal(signal.SIGINT)
        for spy in self._spies:
            spy.wait(timeout=60)
        threads = {str(tid): round(cpu - self._cpu0.get(tid, 0.0), 3) for tid, cpu in cpu1.items()}
        summary = {"wall": round(wall, 3), "process_cpu": round(process_cpu, 3), "threads": threads}
        (self._out / "threads.json").write_text(json.dumps(summary, indent=1))

"""Upload-to-202 and status latency of ``citerun serve`` under concurrent users (issue 26).

Usage::

    python -m bench.web.latency [--users 50] [--uploads 3] [--requests 20]
        [--solo-uploads 30] [--solo-requests 200] [--distinct] [--pool-max N] [--write-docs]

An embedded Postgres in a temporary directory, migrated; the real service as a
``citerun serve --database-url URL --port 0`` subprocess on loopback (its own process and
event loop, as deployed; the clients run in this one). No worker runs: neither answer
waits for one. The 202 comes once the upload is staged, the run created and its first
tasks enqueued in one transaction, and a status reads the run's rows. So every run stays
``running``, and the user caps are raised to fit (``CITERUN_WEB__MAX_ACTIVE_RUNS`` = the
uploads a user makes, ``CITERUN_WEB__MAX_STAGED_BYTES`` 1 GB).

Each user has its own ``aiohttp.ClientSession`` (one connection, as a browser tab)
whose requests carry ``X-Forwarded-User``, believed from 127.0.0.1. It opens ``/`` once
for its session cookie and CSRF token (not timed), then uploads the demo thesis with its
four sources (``examples/``) one after another, each timed from the POST to the 202's
body read (the form is built before the clock starts). When every user has uploaded,
each reads the status of its runs back to back, each read timed: a closed loop, harsher
than the page, which polls every 1.5 s. Phase one is a single user (``--solo-*``: enough
requests for percentiles), phase two ``--users`` at once, on the same server and
database, after one untimed upload and five status reads (the service's first pool
connections and prepared statements). A row's throughput is its requests over its step's
wall time (first request sent to last answer read); its CPU per request is the user +
system time the service process, the Postgres server (postmaster and backends, from
``/proc``) and this client spent in the step, divided by its requests: the work, which
the other jobs on a shared machine do not inflate.

Documents are content-addressed, so identical uploads stage the same ``documents`` rows
and their transactions could queue on those rows' locks. ``--distinct`` appends one
comment line after ``%%EOF`` to each uploaded file: every upload is new bytes, as 50
different theses would be.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import asyncpg
import numpy

from bench import machine as bench_machine
from bench.common import REPO, load_average, postgres, was_busy
from citerun.core import db
from citerun.core.settings import ENV_NESTED, ENV_PREFIX

SECTION = "## The web service under 50 users (issue 26)"
THESIS = REPO / "examples" / "thesis.pdf"
SOURCES = sorted((REPO / "examples" / "sources").glob("*.pdf"))
START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 120.0
_CSRF = re.compile(r'<meta name="csrf-token" content="([^"]+)">')
_LISTENING = re.compile(r"listening on (http://\S+?)/?$", re.M)


class BenchError(Exception):
    """The service did not start or answered something a bench run must not get."""


@dataclass
class Timings:
    """One row of the table: the latencies of one operation at one user count."""

    operation: str
    users: int
    seconds: list[float] = field(default_factory=list)
    failed: int = 0
    first_sent: float = float("inf")
    last_read: float = -float("inf")
    #: CPU seconds the step cost each process (service, postgres, client).
    cpu: dict[str, float] = field(default_factory=dict)

    def add(self, started: float, ended: float, ok: bool) -> None:
        self.first_sent = min(self.first_sent, started)
        self.last_read = max(self.last_read, ended)
        if ok:
            self.seconds.append(ended - started)
        else:
            self.failed += 1

    def row(self) -> list[str]:
        ms = numpy.asarray(self.seconds) * 1000.0
        p50, p90, p99 = numpy.percentile(ms, [50, 90, 99]) if len(ms) else (0.0, 0.0, 0.0)
        span = self.last_read - self.first_sent
        count = len(ms) + self.failed
        rate = count / span if span > 0 else 0.0
        return [self.operation, str(self.users), str(count), str(self.failed),
                f"{p50:.1f}", f"{p90:.1f}", f"{p99:.1f}", f"{ms.max() if len(ms) else 0:.1f}",
                f"{rate:.1f}",
                *(f"{1000 * self.cpu.get(name, 0.0) / max(count, 1):.1f}" for name in CPU_OF)]


#: The processes whose CPU per request the table shows.
CPU_OF = ("service", "postgres", "client")
HEADER = ["operation", "users", "requests", "failed", "p50 ms", "p90 ms", "p99 ms", "max ms",
          "req/s", *(f"{name} CPU ms/req" for name in CPU_OF)]


def table(rows: list[Timings]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(t.row()) + " |" for t in rows]
    return "\n".join(lines)


# -- the service ---------------------------------------------------------------------------

class Service:
    """``citerun serve`` as a subprocess over ``url``, stopped by SIGTERM on the way out."""

    def __init__(self, url: str, log: Path, *, max_active_runs: int,
                 pool_max: int | None) -> None:
        self.url, self.log = url, log
        web = f"{ENV_PREFIX}WEB{ENV_NESTED}"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith(ENV_PREFIX)}
        self.env[f"{web}MAX_ACTIVE_RUNS"] = str(max_active_runs)
        self.env[f"{web}MAX_STAGED_BYTES"] = str(1_000_000_000)
        if pool_max is not None:
            self.env[f"{ENV_PREFIX}POOL_MAX"] = str(pool_max)
        self.proc: subprocess.Popen[bytes] | None = None
        self.base = ""

    def __enter__(self) -> Service:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "citerun", "serve", "--port", "0", "--workers", "0",
                 "--database-url", self.url], env=self.env, stdout=out,
                stderr=subprocess.STDOUT, cwd=REPO)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not (found := _LISTENING.search(self.log.read_text(errors="replace"))):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.__exit__()
                raise BenchError("citerun serve did not start:\n" + self.log.read_text())
            time.sleep(0.1)
        self.base = found.group(1)
        return self

    def __exit__(self, *_exc: object) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the users -----------------------------------------------------------------------------

def _files(tag: str | None) -> list[tuple[str, str, bytes]]:
    """(field, file name, bytes) of one upload; with a tag every file is new bytes (a
    comment after the end of the PDF, which readers ignore)."""
    extra = b"" if tag is None else f"\n% bench upload {tag}\n".encode()
    return [("thesis", THESIS.name, THESIS.read_bytes() + extra),
            *(("sources", p.name, p.read_bytes() + extra) for p in SOURCES)]


class User:
    """One browser session behind the trusted proxy: its cookies and CSRF token."""

    def __init__(self, base: str, name: str) -> None:
        self.base, self.name = base, name
        self.http = aiohttp.ClientSession(
            base, headers={"X-Forwarded-User": name}, cookie_jar=aiohttp.CookieJar(unsafe=True),
            timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S),
            connector=aiohttp.TCPConnector(limit=1))
        self.csrf = ""
        self.runs: list[str] = []

    async def open(self) -> None:
        async with self.http.get("/", headers={"Accept": "text/html"}) as page:
            text = await page.text()
            found = _CSRF.search(text)
            if page.status != 200 or not found:
                raise BenchError(f"{self.name}: GET / answered {page.status}: {text[:300]}")
            self.csrf = found.group(1)

    async def upload(self, timings: Timings, tag: str | None) -> None:
        form = aiohttp.FormData()
        for name, filename, data in _files(tag):
            form.add_field(name, data, filename=filename, content_type="application/pdf")
        headers = {"Origin": self.base, "X-CSRF-Token": self.csrf, "Accept": "application/json"}
        started = time.perf_counter()
        async with self.http.post("/api/runs", data=form, headers=headers) as response:
            body = await response.json(content_type=None)
        ended = time.perf_counter()
        ok = response.status == 202 and isinstance(body, dict) and "runId" in body
        if ok:
            self.runs.append(str(body["runId"]))
        elif not timings.failed:
            print(f"  {self.name}: upload answered {response.status}: {body}", file=sys.stderr)
        timings.add(started, ended, ok)

    async def status(self, timings: Timings, index: int) -> None:
        run_id = self.runs[index % len(self.runs)]
        started = time.perf_counter()
        async with self.http.get(f"/api/runs/{run_id}",
                                 headers={"Accept": "application/json"}) as response:
            body = await response.json(content_type=None)
        ended = time.perf_counter()
        ok = response.status == 200 and isinstance(body, dict) and body.get("runId") == run_id
        if not ok and not timings.failed:
            print(f"  {self.name}: status answered {response.status}: {body}", file=sys.stderr)
        timings.add(started, ended, ok)

    async def close(self) -> None:
        await self.http.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and of its children, live and reaped (Linux
    ``/proc``): the work a phase cost the service or Postgres, whatever else shares the
    cores."""
    clock = os.sysconf("SC_CLK_TCK")

    def own(stat: str) -> tuple[int, float]:
        fields = stat.rsplit(")", 1)[1].split()
        return int(fields[1]), sum(int(x) for x in fields[11:15]) / clock

    total = own(Path(f"/proc/{pid}/stat").read_text())[1]
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent, seconds = own((entry / "stat").read_text())
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            if parent == pid:
                total += seconds
    return total


@dataclass
class Meters:
    """The processes whose CPU a phase is charged: the service and the Postgres server."""

    pids: dict[str, int]

    def read(self) -> dict[str, float]:
        return {**{name: cpu_seconds(pid) for name, pid in self.pids.items()},
                "client": time.process_time()}  # this process alone (the service is a child)


async def phase(base: str, users: int, uploads: int, requests: int, distinct: bool,
                label: str, meters: Meters) -> tuple[Timings, Timings]:
    """``users`` users at once: each opens the page, uploads ``uploads`` times, then
    (when all have uploaded) reads its runs' status ``requests`` times."""
    people = [User(base, f"{label}-user{i:02d}") for i in range(users)]
    upload_t, status_t = Timings("upload -> 202", users), Timings("status", users)

    async def uploader(user: User) -> None:
        for i in range(uploads):
            await user.upload(upload_t, f"{user.name}-{i}" if distinct else None)

    async def reader(user: User) -> None:
        if user.runs:
            for i in range(requests):
                await user.status(status_t, i)

    try:
        await asyncio.gather(*(u.open() for u in people))
        for timings, step in ((upload_t, uploader), (status_t, reader)):
            start = meters.read()
            await asyncio.gather(*(step(u) for u in people))
            end = meters.read()
            timings.cpu = {name: end[name] - start[name] for name in end}
    finally:
        await asyncio.gather(*(u.close() for u in people))
    return upload_t, status_t


# -- the report ----------------------------------------------------------------------------

def reading(rows: list[Timings]) -> str:
    """What the table says, in figures taken from it (Little's law: a closed loop of
    ``users`` has about ``users / throughput`` in flight per answer)."""
    up1, st1, upn, stn = rows

    def p(t: Timings, q: float) -> float:
        return float(numpy.percentile(numpy.asarray(t.seconds) * 1000.0, q)) if t.seconds else 0.0

    def rate(t: Timings) -> float:
        span = t.last_read - t.first_sent
        return (len(t.seconds) + t.failed) / span if span > 0 else 0.0

    def cpu(t: Timings) -> float:
        """Milliseconds of service + Postgres CPU per request."""
        count = max(len(t.seconds) + t.failed, 1)
        return 1000 * (t.cpu.get("service", 0.0) + t.cpu.get("postgres", 0.0)) / count

    cores = os.cpu_count() or 1

    def cap(t: Timings) -> float:
        """Requests/s the CPU work allows: all cores, and one for the service process."""
        count = max(len(t.seconds) + t.failed, 1)
        service_ms = max(1000 * t.cpu.get("service", 0.0) / count, 1e-9)
        return min(1000 * cores / max(cpu(t), 1e-9), 1000 / service_ms)

    return (
        f"Alone, a user's upload is answered in {p(up1, 50):.0f} ms (p50) and a status in "
        f"{p(st1, 50):.1f} ms. With {upn.users} users at once the service answers "
        f"{rate(upn):.1f} uploads/s and {rate(stn):.0f} status reads/s; an upload's p50 "
        f"becomes {p(upn, 50):.0f} ms (p99 {p(upn, 99):.0f} ms) and a status's "
        f"{p(stn, 50):.1f} ms (p99 {p(stn, 99):.1f} ms). Each user sends its next request "
        f"when the last is answered, so the latency is the queue: {upn.users} users / "
        f"{rate(upn):.1f} per s = {1000 * upn.users / max(rate(upn), 1e-9):.0f} ms per upload, "
        f"{1000 * stn.users / max(rate(stn), 1e-9):.0f} ms per status. The service and "
        f"Postgres spend {cpu(upn):.1f} ms of CPU per upload and {cpu(stn):.1f} ms per "
        f"status (the client {1000 * upn.cpu.get('client', 0.0) / max(len(upn.seconds), 1):.1f}"
        f" and {1000 * stn.cpu.get('client', 0.0) / max(len(stn.seconds), 1):.1f} ms). The "
        f"work alone would allow about {cap(upn):.0f} uploads/s and {cap(stn):.0f} status "
        f"reads/s (the {cores} cores, and one core for the service's one process); the rest "
        f"of each request's time is waiting, not work: for the cores the other jobs held, "
        f"and for the commits (fsync on). The page polls every "
        f"1.5 s, so {stn.users} users watching their runs ask for {stn.users / 1.5:.0f} status "
        f"reads/s, {rate(stn) / (stn.users / 1.5):.1f} times less than this run served back "
        f"to back. Failed requests: {sum(t.failed for t in rows)}.")


def report(rows: list[Timings], info: dict[str, str], command: str, args: argparse.Namespace,
           loads: tuple[str, str]) -> str:
    machine = ", ".join(f"{k} {v}" for k, v in info.items())
    busy = was_busy(*loads)
    lines = [
        SECTION, "",
        f"Command: `{command}` (`bench/web/latency.py`; its docstring has the method).", "",
        f"Data: the demo thesis `examples/thesis.pdf` and its {len(SOURCES)} sources "
        f"`examples/sources/*.pdf` ({sum(len(b) for _, _, b in _files(None)):,} bytes "
        f"in all) per upload, "
        + ("each upload's files made distinct by a trailing comment line"
           if args.distinct else "the same bytes in every upload (content-addressed: the "
           "same five document rows)")
        + f". Phase one: one user, {args.solo_uploads} uploads, then {args.solo_requests} "
        f"status reads. "
        f"Phase two: {args.users} users at once, each with its own aiohttp session and "
        f"`X-Forwarded-User`, {args.uploads} uploads each, then {args.requests} status reads "
        f"each, back to back. The service is `citerun serve --database-url` (a subprocess, "
        f"pool of {args.pool_max or 'the default 8'} connections) over an embedded Postgres "
        f"on loopback. No worker runs (neither the 202 nor a status waits for one), so the "
        f"runs stay running and the caps are raised to fit.", "",
        f"Machine: {machine}; load average {loads[0]} before, {loads[1]} after"
        + (" (the machine was shared: the times are inflated)" if busy else "") + ".", "",
        table(rows), "",
        reading(rows), ""]
    return "\n".join(lines)


async def main_async(args: argparse.Namespace, url: str, log: Path,
                     postmaster: int) -> list[Timings]:
    await db.migrate(url)
    rows: list[Timings] = []
    with Service(url, log, max_active_runs=max(args.uploads, args.solo_uploads),
                 pool_max=args.pool_max) as served:
        assert served.proc is not None
        meters = Meters({"service": served.proc.pid, "postgres": postmaster})
        print(f"service at {served.base}; warming up ...", flush=True)
        await phase(served.base, 1, 1, 5, args.distinct, "warmup", meters)  # not reported
        print("one user ...", flush=True)
        rows += await phase(served.base, 1, args.solo_uploads, args.solo_requests,
                            args.distinct, "solo", meters)
        print(f"{args.users} users ...", flush=True)
        rows += await phase(served.base, args.users, args.uploads, args.requests,
                            args.distinct, "many", meters)
    return rows


async def _server_version(url: str) -> str:
    conn = await asyncpg.connect(url)
    try:
        return str(await conn.fetchval("SHOW server_version"))
    finally:
        await conn.close()


def main() -> int:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--users", type=int, default=50, help="concurrent users of phase two")
    p.add_argument("--uploads", type=int, default=3, help="uploads per user")
    p.add_argument("--requests", type=int, default=20, help="status reads per user")
    p.add_argument("--solo-uploads", type=int, default=30, help="uploads of the lone user")
    p.add_argument("--solo-requests", type=int, default=200,
                   help="status reads of the lone user")
    p.add_argument("--distinct", action="store_true",
                   help="make every upload's files new bytes (no shared document rows)")
    p.add_argument("--pool-max", type=int, default=None,
                   help="the service's Postgres pool (CITERUN_POOL_MAX; default its own, 8)")
    p.add_argument("--write-docs", action="store_true",
                   help=f"replace the '{SECTION[3:]}' section of docs/benchmarks.md")
    args = p.parse_args()
    if min(args.users, args.uploads, args.requests, args.solo_uploads, args.solo_requests) < 1:
        p.error("the counts must be at least 1")
    before = load_average()
    with postgres("citerun-bench-web-") as (tmp, server):
        url = server.url()
        postmaster = int((server.pgdata / "postmaster.pid").read_text().split()[0])
        rows = asyncio.run(main_async(args, url, tmp / "serve.log", postmaster))
        info = {**bench_machine.basics(), "PostgreSQL": asyncio.run(_server_version(url))}
    after = load_average()
    command = " ".join(["python -m bench.web.latency",
                        *[a for a in sys.argv[1:] if a != "--write-docs"]])
    text = report(rows, info, command, args, (before, after))
    print(text)
    bench_machine.write_section_if(args.write_docs, SECTION, text)
    return 1 if any(t.failed for t in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

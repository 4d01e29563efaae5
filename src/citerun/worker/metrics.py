"""Prometheus metrics of one worker, and the HTTP endpoint that serves them with /healthz.

Each worker owns a ``CollectorRegistry`` (several workers may live in one test process).
Queue depth is read from Postgres at most once per ``depth_interval_s`` (the scrape
interval), and only when something scrapes: an idle, unscraped worker sends the database
nothing for metrics, and a second scraper within the interval gets the cached counts.
``/healthz`` (the pod's probes) never touches the database: it answers from the event
loop's own tick, so a database outage does not restart healthy workers, while a worker
whose event loop is stuck is reported as failing.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from socketserver import ThreadingMixIn
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import prometheus_client
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                    10, 30, 60, 300)


class WorkerMetrics:
    def __init__(self, *, depth_interval_s: float = 15.0, stall_s: float = 30.0) -> None:
        self.registry = prometheus_client.CollectorRegistry()
        self.depth_interval_s = depth_interval_s
        self.stall_s = stall_s
        self.loop_tick = time.monotonic()  # stamped by the worker's event loop
        r = self.registry
        self.claim_latency = prometheus_client.Histogram(
            "citerun_claim_latency_seconds", "Seconds from a task becoming due to its claim.",
            ["kind"], buckets=_LATENCY_BUCKETS, registry=r)
        self.task_duration = prometheus_client.Histogram(
            "citerun_task_duration_seconds", "Seconds a handler ran.", ["kind", "outcome"],
            buckets=_LATENCY_BUCKETS, registry=r)
        self.lease_losses = prometheus_client.Counter(
            "citerun_lease_losses_total", "Tasks whose lease this worker lost while running.",
            ["kind"], registry=r)
        self.requeues = prometheus_client.Counter(
            "citerun_requeues_total", "Tasks put back in the queue by this worker.",
            ["reason"], registry=r)
        self.pickups = prometheus_client.Counter(
            "citerun_pickups_total", "Claims that found work, by what woke the worker.",
            ["source"], registry=r)
        self.loop_lag = prometheus_client.Histogram(
            "citerun_event_loop_lag_seconds", "How late the event loop woke a 1 s timer: "
            "time the loop spent on CPU work instead of claiming.", buckets=_LATENCY_BUCKETS,
            registry=r)
        self.loop_lag_max = prometheus_client.Gauge(
            "citerun_event_loop_lag_max_seconds", "Longest event-loop lag seen so far.",
            registry=r)
        self.gc_pause = prometheus_client.Histogram(
            "citerun_gc_pause_seconds", "Garbage-collector pauses of the worker process.",
            ["generation"], buckets=_LATENCY_BUCKETS, registry=r)
        self.gc_pause_max = prometheus_client.Gauge(
            "citerun_gc_pause_max_seconds", "Longest garbage-collector pause seen so far.",
            registry=r)
        self._gc_started = 0.0
        self._loop_lag_max_s = 0.0
        self._gc_pause_max_s = 0.0
        self.in_flight = prometheus_client.Gauge(
            "citerun_tasks_in_flight", "Tasks this worker holds now.", registry=r)

    def observe_loop_lag(self, lag_s: float) -> None:
        self.loop_lag.observe(lag_s)
        if lag_s > self._loop_lag_max_s:
            self._loop_lag_max_s = lag_s
            self.loop_lag_max.set(lag_s)

    def watch_gc(self) -> None:
        """Time every collection (a pause of the event loop); :meth:`unwatch_gc` stops."""
        gc.callbacks.append(self._on_gc)

    def unwatch_gc(self) -> None:
        if self._on_gc in gc.callbacks:
            gc.callbacks.remove(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        pause = time.perf_counter() - self._gc_started
        self.gc_pause.labels(str(info.get("generation", "?"))).observe(pause)
        if pause > self._gc_pause_max_s:
            self._gc_pause_max_s = pause
            self.gc_pause_max.set(pause)

    def watch_queue_depth(self, loop: asyncio.AbstractEventLoop, read: Any) -> None:
        """Report queue depth by calling ``read()`` (a coroutine factory), cached per interval."""
        self.registry.register(_DepthCollector(loop, read, self.depth_interval_s))

    def healthy(self) -> bool:
        """Whether the event loop ticked within ``stall_s`` (no database involved)."""
        return time.monotonic() - self.loop_tick < self.stall_s

    def serve(self, port: int, addr: str = "0.0.0.0") -> WSGIServer:
        """Serve ``/metrics`` and ``/healthz`` from a daemon thread."""
        metrics_app = prometheus_client.make_wsgi_app(self.registry)

        def app(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
            if environ.get("PATH_INFO") == "/healthz":
                ok = self.healthy()
                start("200 OK" if ok else "503 Service Unavailable",
                      [("Content-Type", "text/plain")])
                return [b"ok\n" if ok else b"event loop stalled\n"]
            return metrics_app(environ, start)  # type: ignore[no-any-return]

        server = make_server(addr, port, app, _ThreadingServer, handler_class=_QuietHandler)
        threading.Thread(target=server.serve_forever, name="metrics-http", daemon=True).start()
        return server


class _ThreadingServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib's name
        """Probes every few seconds would flood the log."""


class _DepthCollector(Collector):
    def __init__(self, loop: asyncio.AbstractEventLoop, read: Any, interval_s: float) -> None:
        self._loop = loop
        self._read = read
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], int] = {}
        self._read_at = float("-inf")

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("citerun_queue_depth",
                                   "Open tasks (queued, running) of the kinds this worker serves.",
                                   labels=["kind", "state"])
        with self._lock:  # concurrent scrapes share one read
            if time.monotonic() - self._read_at >= self._interval_s:
                try:
                    self._counts = asyncio.run_coroutine_threadsafe(
                        self._read(), self._loop).result(5)
                    self._read_at = time.monotonic()
                except Exception:  # noqa: BLE001 - a scrape must not fail: the DB may be away
                    self._counts = {}
            counts = self._counts
        for (kind, state), n in sorted(counts.items()):
            family.add_metric([kind, state], n)
        yield family

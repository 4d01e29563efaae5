"""Prometheus metrics of one worker.

Each worker owns a ``CollectorRegistry`` (several workers may live in one test process).
Queue depth is read from Postgres only when Prometheus scrapes, so an idle, unscraped
worker sends the database nothing for metrics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import prometheus_client
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5,
                    10, 30, 60, 300)


class WorkerMetrics:
    def __init__(self) -> None:
        self.registry = prometheus_client.CollectorRegistry()
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
        self.in_flight = prometheus_client.Gauge(
            "citerun_tasks_in_flight", "Tasks this worker holds now.", registry=r)

    def watch_queue_depth(self, loop: asyncio.AbstractEventLoop, read: Any) -> None:
        """Report queue depth by calling ``read()`` (a coroutine factory) on scrape."""
        self.registry.register(_DepthCollector(loop, read))

    def serve(self, port: int) -> Any:
        server, _thread = prometheus_client.start_http_server(port, registry=self.registry)
        return server


class _DepthCollector(Collector):
    def __init__(self, loop: asyncio.AbstractEventLoop, read: Any) -> None:
        self._loop = loop
        self._read = read

    def collect(self) -> Iterator[GaugeMetricFamily]:
        family = GaugeMetricFamily("citerun_queue_depth", "Tasks by kind and state.",
                                   labels=["kind", "state"])
        try:
            counts = asyncio.run_coroutine_threadsafe(self._read(), self._loop).result(5)
        except Exception:  # noqa: BLE001 - a scrape must not fail because the DB is away
            counts = {}
        for (kind, state), n in sorted(counts.items()):
            family.add_metric([kind, state], n)
        yield family

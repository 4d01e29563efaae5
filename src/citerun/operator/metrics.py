"""Prometheus metrics of the operator: the autoscaler's view and its decisions."""

from __future__ import annotations

import prometheus_client


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = prometheus_client.CollectorRegistry()
        r = self.registry
        self.desired = prometheus_client.Gauge(
            "citerun_autoscaler_desired_replicas", "Workers the autoscaler wants.", registry=r)
        self.current = prometheus_client.Gauge(
            "citerun_autoscaler_current_replicas",
            "Replicas of the worker Deployment at the last evaluation.", registry=r)
        self.outstanding = prometheus_client.Gauge(
            "citerun_queue_outstanding_tasks", "Tasks due or running at the last evaluation.",
            ["state"], registry=r)
        self.busy_workers = prometheus_client.Gauge(
            "citerun_autoscaler_busy_workers", "Workers holding at least one task.", registry=r)
        self.decisions = prometheus_client.Counter(
            "citerun_autoscaler_decisions_total", "Evaluations, by the decision's reason.",
            ["reason"], registry=r)
        self.scalings = prometheus_client.Counter(
            "citerun_autoscaler_scale_changes_total", "Replica changes applied.",
            ["direction"], registry=r)
        self.leader = prometheus_client.Gauge(
            "citerun_autoscaler_leader", "1 while this replica holds the autoscaler Lease.",
            registry=r)

    def serve(self, port: int) -> None:
        prometheus_client.start_http_server(port, registry=self.registry)

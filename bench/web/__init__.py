"""Benches of ``citerun serve``, the web service: the latency of an upload's ``202`` and of
a run's status under many concurrent users (``latency``)."""

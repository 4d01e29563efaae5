"""The task queue's benches: ``python -m bench.queue`` compares it with pgqueuer and
procrastinate (:mod:`bench.queue.compare`); ``scale``, ``retention`` and
``deadline_week`` measure it alone. The ``*tasks`` modules are what their workers serve."""

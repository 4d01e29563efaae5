"""Benchmarks and evaluations of citerun, run from the repository root as modules.

``python -m bench.queue`` (the queue against pgqueuer and procrastinate) and the rest:
``bench.queue.*`` (the task queue), ``bench.cluster.*`` (autoscaling, a real node),
``bench.pipeline.*`` (parse, embed, judge and ``citerun verify`` speed),
``bench.quality.*`` (retrieval and judging on SciFact, real PDFs against hand-made
truth), ``training.*`` (what writes the judge's shipped model and lexicon).
``bench.common`` and ``bench.machine`` are what they share. README.md lists the commands.
"""

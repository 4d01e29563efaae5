"""Judges: does a passage of the cited source support the claim of the thesis?

One module per reason to change: :mod:`.types` (the contract with the pipeline),
:mod:`.language` (reading claims and sources), :mod:`.rules` (the rule-based embedded
judge), :mod:`.budget` (a run's token budget), :mod:`.openai` (the OpenAI-compatible
judge) and :mod:`.factory` (which judge a run uses). The pipeline imports the public
names from :mod:`citerun.pipeline.judge`.
"""

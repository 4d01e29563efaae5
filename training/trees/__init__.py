"""The trees: gradient-boosted trees over hand features, the embedded judge's decision
before the reader (issue 23, step 3), kept out of the shipped package (issue 50) for the
benches that compare with them.

:mod:`.features` (the hand features, computed from the shipped judge's ranked sentences),
:mod:`.model` (the trees' artifact ``judge_model.json``, their inference and training step,
and their out-of-domain calibration ``calibration.json``) and :mod:`.judge` (the judge with
the trees and the other research switches). ``training.judge`` trains the trees,
``training.fit_calibration`` fits their calibration; ``README.md`` is their model card.
"""

"""The fuzz corpus replayed (issue 48, item 4): every input of ``fuzz/corpus/`` (the
readers' tests' own inputs, hostile ones included, and what the fuzzer found since) through
every fuzz target, as the worker calls its reader; each ends read or in the reader's
documented refusal, within a CPU bound. A crash the fuzzer finds is kept in the corpus of
its target and a test in tests/unit/test_fuzz_findings.py says what was wrong.
"""

from __future__ import annotations

import pathlib
import time

import pytest

from fuzz import seeds, targets

CORPUS = seeds.CORPUS
#: CPU seconds one corpus input may take in any target (the fuzzer's slow-input bound).
MAX_CPU_S = 5.0


def _inputs() -> list[pathlib.Path]:
    return sorted(p for p in CORPUS.glob("*/*") if p.is_file())


def test_every_target_has_a_corpus() -> None:
    for target in targets.TARGETS:
        found = list((CORPUS / target).glob(seeds.SEED_PREFIX + "*"))
        assert len(found) >= 5, (target, len(found))
        assert all(p.stat().st_size <= 2 * seeds.MAX_BYTES for p in found), target


@pytest.mark.parametrize("target", sorted(targets.TARGETS))
def test_the_whole_corpus_through_each_target(target: str) -> None:
    slow = []
    for path in _inputs():
        data = path.read_bytes()
        started = time.process_time()
        try:
            targets.run(target, data)
        except Exception as err:  # noqa: BLE001 - said with the input that raised it
            raise AssertionError(f"{target} crashed on {path.relative_to(CORPUS)}: "
                                 f"{type(err).__name__}: {err}") from err
        spent = time.process_time() - started
        if spent > MAX_CPU_S:
            slow.append((str(path.relative_to(CORPUS)), round(spent, 2)))
    assert not slow, slow

"""Issue 48, low finding: a writer's thesis amplified into citations. Each short sentence
with its own \\cite stays under the per-claim and all-claims caps, so doubling macros in a
few hundred bytes of .tex made a thesis of 100,000 citations, each sent back from the
parse child, stored and judged.

The real parse child (``steps.parse`` under ``sandbox.run``, as the worker runs it): a
.tex of under 450 bytes whose macros double one cited sentence 12 times (4,096
citations) is refused as ``document_too_complex`` naming ``limits.max_citations`` when
that is set below it, before any citation leaves the child; the same thesis under a
limit above it is read whole. The default is the matching's (20,000).
"""

from __future__ import annotations

import json

from citerun.pipeline import citations, document, intake
from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.worker import sandbox, steps

BIB = b"@article{alt2020, title={Tool use in crows}, author={Alt, Anna}, year={2020}}\n"


def _doubled_sentences(doublings: int) -> bytes:
    """A thesis whose macros double one cited sentence ``doublings`` times."""
    names = [chr(ord("a") + n) for n in range(doublings + 1)]
    defs = ["\\newcommand{\\sa}{Crows bend twigs into hooks \\cite{alt2020}. }"]
    defs += [f"\\newcommand{{\\s{b}}}{{\\s{a}\\s{a}}}" for a, b in zip(names, names[1:])]
    return ("\\documentclass{article}\n" + "\n".join(defs)
            + f"\n\\begin{{document}}\n\\s{names[-1]}\n\\end{{document}}\n").encode()


async def _parse(tex: bytes, limits: LimitSettings) -> steps.Parsed | steps.Rejected:
    data = intake.thesis_bytes("thesis.tex", tex, [("refs.bib", BIB)])
    return await sandbox.run(limits.parse, steps.parse, data, limits,
                             DocumentSettings(max_bytes=10**8), slots=limits.max_children)


async def test_a_thesis_amplified_into_citations_is_refused_in_the_child() -> None:
    tex = _doubled_sentences(12)
    assert len(tex) < 450
    outcome = await _parse(tex, LimitSettings(max_citations=4_000))
    if isinstance(outcome, steps.Parsed):  # before: every citation sent back and stored
        # (423 bytes of .tex: 4,096 citations, 0.8 MB of parsed JSON; 17 doublings would
        # make the 100,000 and more)
        written = document.written_json(outcome.document) or {}
        raise AssertionError(f"{len(tex)} bytes of .tex: {len(written['citations']):,} "
                             f"citations, {len(json.dumps(written)) / 1e6:.1f} MB of parsed JSON")
    assert outcome.reason == sandbox.REASON
    assert outcome.message.endswith("4,096 citations, over the limit of 4,000 citations per "
                                    "thesis (limits.max_citations)"), outcome.message

    whole = await _parse(tex, LimitSettings(max_citations=4_096))
    assert isinstance(whole, steps.Parsed), whole
    read = document.written_json(whole.document)
    assert read is not None and len(read["citations"]) == 4_096


def test_the_default_is_the_matchings() -> None:
    assert LimitSettings().max_citations == citations.MatchConfig().max_citations == 20_000

"""Issue 41, findings 1 and 3: a claim is bounded where claims are made, and one sentence
carrying many citations cannot multiply itself into the parsed thesis.

Finding 3 (Medium): "one sentence with many \\cite's is copied once per citation": a
4 KB upload made 101 MB of parsed-thesis JSON. Here a 680-byte .tex (macros doubling a
sentence and its \\cite's) read by the real parse job in the real sandbox child under the
parse limits: before the fix it came back with 4,096 citations of an 11,800-character
claim (48 MB of JSON sent to the worker and stored); now it is refused with the limit
named, in the child, before anything is sent back.
"""

from __future__ import annotations

import json

from citerun.pipeline import citations, intake
from citerun.pipeline.citations import model
from citerun.pipeline import document
from citerun.pipeline.settings import DocumentSettings, LimitSettings
from citerun.worker import sandbox, steps

LIMITS = LimitSettings()
BIB = b"@article{alvarez2019, title={Nocturnal Heat}, author={Alvarez, Maria}, year={2019}}\n"


def _doubling_tex(sentence_doublings: int, cite_doublings: int) -> bytes:
    """A thesis of one sentence: a phrase doubled by macros ``sentence_doublings`` times,
    carrying two \\cite's doubled ``cite_doublings`` times."""
    defs = ["\\newcommand{\\wa}{urban heat island at night in dense city cores}",
            "\\newcommand{\\ca}{\\cite{alvarez2019}\\cite{lindqvist2021}}"]
    for kind in ("w", "c"):
        for i in range(sentence_doublings if kind == "w" else cite_doublings):
            name, prev = f"{kind}{chr(ord('b') + i)}", f"{kind}{chr(ord('a') + i)}"
            glue = " " if kind == "w" else ""
            defs.append(f"\\newcommand{{\\{name}}}{{\\{prev}{glue}\\{prev}}}")
    sentence = f"w{chr(ord('a') + sentence_doublings)}"
    cites = f"c{chr(ord('a') + cite_doublings)}"
    tex = ("\\documentclass{article}\n" + "\n".join(defs)
           + f"\n\\begin{{document}}\nThe \\{sentence} grows \\{cites}.\n\\end{{document}}\n")
    return tex.encode()


async def _parse(tex: bytes) -> steps.Parsed | steps.Rejected:
    data = intake.thesis_bytes("thesis.tex", tex, [("refs.bib", BIB)])
    return await sandbox.run(LIMITS.parse, steps.parse, data, LIMITS,
                             DocumentSettings(max_bytes=10**8), slots=LIMITS.max_children)


async def test_one_sentence_carrying_thousands_of_cites_is_refused_in_the_child() -> None:
    tex = _doubling_tex(8, 11)
    assert len(tex) < 1000
    outcome = await _parse(tex)
    if isinstance(outcome, steps.Parsed):  # before the fix: the sentence once per \cite
        stored = document.written_json(outcome.document) or {}
        written = json.dumps(stored)
        raise AssertionError(f"{len(stored['citations']):,} citations, "
                             f"{len(written) / 1e6:.0f} MB of parsed JSON")
    assert outcome.reason == sandbox.REASON
    assert "limits.max_claims_chars" in outcome.message and "4,096 citations" in outcome.message


async def test_a_long_written_claim_is_cut_and_reported_where_it_stands() -> None:
    sentence = " ".join(f"word{n}" for n in range(1500))  # about 12,000 characters
    tex = (f"\\documentclass{{article}}\n\\begin{{document}}\nThe {sentence} grows "
           "\\cite{alvarez2019}.\nA short one \\cite{alvarez2019}.\n\\end{document}\n").encode()
    outcome = await _parse(tex)
    assert isinstance(outcome, steps.Parsed), outcome
    written = document.written_json(outcome.document)  # as the parse stage stores it
    assert written is not None
    claims = [c["claim"] for c in written["citations"]]
    assert len(claims) == 2 and max(map(len, claims)) <= LIMITS.max_claim_chars
    assert claims[0].endswith(" …") and claims[0].startswith("The word0 word1")
    assert claims[1] == "A short one."
    [note] = [s for s in written["skipped"] if "max_claim_chars" in s["reason"]]
    assert note["where"] == "thesis.tex:3", note
    assert f"a claim of {len('The ' + sentence + ' grows.'):,} characters" in note["reason"], note


def test_bound_claims_cuts_at_a_word_and_notes_each_claim_once() -> None:
    long = "The heat " + "island " * 1000 + "ends."
    cited = tuple(model.ExtractedCitation(ordinal=n, key=str(n), claim=long, page=2, marker=f"[{n}]",
                                          locator=None) for n in (1, 2, 3))
    short = model.ExtractedCitation(ordinal=4, key="4", claim="A short claim.", page=3,
                                    marker="[4]", locator=None)
    bounded = citations.bound_claims(model.Extraction((*cited, short), (), None), 2000)
    claims = [c.claim for c in bounded.citations]
    assert all(len(c) <= 2000 for c in claims) and claims[3] == "A short claim."
    assert claims[0] == claims[1] == claims[2] and claims[0].endswith("island …")
    [note] = bounded.skipped
    assert note.where == "page 2" and f"a claim of {len(long):,} characters" in note.reason
    unchanged = model.Extraction((short,), (), None)
    assert citations.bound_claims(unchanged, 2000) is unchanged
    assert citations.claims_over(claims, 8000) is None
    assert "limits.max_claims_chars" in (citations.claims_over(claims, 5000) or "")

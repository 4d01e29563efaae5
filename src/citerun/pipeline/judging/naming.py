"""The verdict of a citation that names a work, when its source is that work.

"... a lock service called Chubby [8]" attributes one thing to [8]: that it is the
Chubby paper (:mod:`citerun.pipeline.citations.attribution` finds such citations). When
the source shows the name, in its title, its authors or a sentence of its first page,
the citation is ``supported`` without a judge reading the sentence, and the rationale
says what was checked; when it does not, the ordinary judge reads the whole sentence as
for any other citation, so a naming alone never makes a citation ``contradicted``.
"""

from __future__ import annotations

import collections.abc

from citerun.pipeline.citations import attribution
from citerun.pipeline.judging.types import Evidence, Judgement, Verdict

#: Confidence of a name found in the source: the name is there, but a common word as a
#: name ("Spark") could be on the first page of another work too.
CONFIDENCE = 0.9
#: The chunk id of evidence that is no retrieved chunk (the title or the first page).
NO_CHUNK = 0


def judge_named(name: str, title: str | None, authors: collections.abc.Sequence[str],
                first_page: str) -> Judgement | None:
    """``supported`` when the source (``title``, ``authors``, ``first_page``) is the
    work ``name`` names; None when it does not show the name (judge the sentence)."""
    found = attribution.found_in(name, title, authors, first_page)
    if found is None:
        return None
    quote = found.quote if len(found.quote) <= 300 else found.quote[:297] + "..."
    return Judgement(
        Verdict.SUPPORTED, CONFIDENCE, (Evidence(found.quote, 1, 1, 1.0, NO_CHUNK),),
        f'The citation names the work "{name}", and the source is that work: the name is '
        f'in {found.where} ("{quote}"). A citation attached to a name attributes the name '
        "to its source, not the rest of the sentence, so the sentence was not judged.")

"""What the report checks beyond the verdict: quotations verbatim, cited pages by label.

A claim that quotes its source ("…", „…“, »…«) has each quoted passage searched for in
the source's pages (:mod:`citerun.pipeline.citations.quotations`); a citation with a page
locator has it compared with the printed label of the page where the passage stands
(:mod:`citerun.pipeline.citations.locators`): the quotation's pages when it was found,
else, for a claim the source supports, the evidence's. Labels are the source's printed
page labels (:mod:`citerun.pipeline.pdf.labels`), never the PDF's page index.
"""

from __future__ import annotations

import collections.abc

from citerun.pipeline import judge
from citerun.pipeline.citations import locators, quotation_check, quotation_source, quotations
from citerun.pipeline.report.model import EvidenceEntry, PageCheck, QuotationResult

#: Source pages as (printed label, text), in order.
SourcePages = collections.abc.Sequence[tuple[str, str]]


_UNCHECKED: tuple[list[QuotationResult], list[quotations.QuotationCheck]] = ([], [])


def quoted(claim: str) -> list[quotations.Quotation]:
    """The quoted passages of a claim (none for a scare quote of a word or two)."""
    return quotations.find_quotations(claim)


#: Distinct (claim, source) pairs whose quotations one report searches for (issue 41: no
#: bound before, outside any sandbox). The slowest search measured took 0.12 s of CPU (a
#: 1,260-character quotation not found in a 9.5 MB source), so 1,000 keep a report's
#: checks within about 2 minutes at worst; the rest are listed as not checked.
MAX_QUOTE_CHECKS = 1_000


class Checker:
    """The checks of one report; each source's text is prepared once for all its quotes."""

    def __init__(self, sources: collections.abc.Mapping[str, SourcePages]) -> None:
        self._pages = sources
        self._prepared: dict[str, quotation_source.SourceText] = {}
        # A sentence cited K times is checked once (issue 41).
        self._checked: dict[tuple[str, str | None],
                            tuple[list[QuotationResult], list[quotations.QuotationCheck]]] = {}
        self._searched = 0
        #: Citations whose quotations were not searched for (over MAX_QUOTE_CHECKS).
        self.unchecked = 0

    def _source(self, digest: str) -> quotation_source.SourceText | None:
        if digest not in self._prepared:
            pages = self._pages.get(digest)
            if not pages:
                return None
            self._prepared[digest] = quotation_source.prepare_source(pages)
        return self._prepared[digest]

    def check_quotes(self, claim: str, digest: str | None
                   ) -> tuple[list[QuotationResult], list[quotations.QuotationCheck]]:
        """Each quoted passage of ``claim`` searched for in the source ``digest`` (once per
        pair: a repeated pair gets the first answer)."""
        if (claim, digest) not in self._checked:
            self._checked[(claim, digest)] = self._check_quotes(claim, digest)
        elif self._checked[(claim, digest)] is _UNCHECKED:
            self.unchecked += 1
        results, checks = self._checked[(claim, digest)]
        return list(results), list(checks)

    def _check_quotes(self, claim: str, digest: str | None
                      ) -> tuple[list[QuotationResult], list[quotations.QuotationCheck]]:
        found = quoted(claim)
        source = self._source(digest) if digest and found else None
        if source is None:
            return [], []
        if self._searched >= MAX_QUOTE_CHECKS:
            self.unchecked += 1
            return _UNCHECKED
        self._searched += 1
        results, checks = [], []
        for quote in found:
            try:
                check = quotation_check.check_quotation(quote.text, source)
            except quotations.QuotationError:
                continue  # empty or over the limits: nothing to report
            checks.append(check)
            results.append(QuotationResult(quote=quote.text, status=check.status,
                                           pages=list(check.labels), difference=check.difference))
        return results, checks

    @staticmethod
    def page_check(locator: str | None, verdict: judge.Verdict,
                   checks: list[quotations.QuotationCheck], evidence: list[EvidenceEntry],
                   labels: collections.abc.Mapping[int, str]) -> PageCheck | None:
        """The locator against where the quotation, or a supported claim's evidence, stands."""
        if not locator:
            return None
        parsed = locators.parse_locator(locator)
        found = [label for c in checks if c.status != "not_found" for label in c.labels]
        if not found and not checks and verdict in (judge.Verdict.SUPPORTED,
                                                    judge.Verdict.PARTIALLY_SUPPORTED):
            for e in evidence[:1]:  # the best passage: the one the verdict rests on
                numbers = [e.page] if e.page else list(range(e.page_start, e.page_end + 1))
                found = [labels[n] for n in numbers if n in labels]
        result = locators.check_locator(parsed, found)
        return PageCheck(status=result.status, found=list(result.actual), reason=result.reason)

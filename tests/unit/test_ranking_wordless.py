"""A source whose text holds no word (a text layer of U+FFFD, stop words only) is an empty
BM25 index, not a crash (issue 46: bm25s raised "max() arg is an empty sequence" and the
judge task died on every attempt, failing the whole run)."""

from __future__ import annotations

from citerun.pipeline import ranking


def test_chunks_without_a_word_rank_nothing() -> None:
    index = ranking.build_bm25([1, 2], ["\ufffd" * 300, "\ufffd\ufffd \ufffd"])
    assert ranking.bm25_rank(index, "Faults reactivate along old sutures", 5) == []
    index = ranking.build_bm25([1], ["the of and a"])
    assert ranking.bm25_rank(index, "faults", 5) == []


def test_chunks_with_words_still_rank() -> None:
    index = ranking.build_bm25([7, 8], ["\ufffd\ufffd", "faults reactivate along sutures"])
    assert [chunk for chunk, _ in ranking.bm25_rank(index, "sutures", 5)] == [8]

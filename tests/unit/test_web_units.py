"""Sizes in words, as the web service's errors and hints give them (citerun.web.units)."""

from __future__ import annotations

from citerun.web.units import human_bytes


def test_sizes_in_words() -> None:
    assert human_bytes(0) == "0 bytes"
    assert human_bytes(1) == "1 byte"
    assert human_bytes(999) == "999 bytes"
    assert human_bytes(1536) == "1.5 KiB"
    assert human_bytes(400_000) == "390 KiB"
    assert human_bytes(120_000_000) == "114 MiB"  # not "120000000 bytes"
    assert human_bytes(5 << 30) == "5 GiB"

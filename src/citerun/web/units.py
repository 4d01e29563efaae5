"""Sizes as people read them: "114 MiB", not "120000000 bytes"."""

from __future__ import annotations


def human_bytes(count: int) -> str:
    """``count`` bytes in binary units, rounded down to what a limit allows: 120000000
    is "114 MiB", 1536 is "1.5 KiB", 999 is "999 bytes"."""
    if count < 1024:
        return f"{count} byte" + ("" if count == 1 else "s")
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= size:
            value = count / size
            shown = f"{int(value * 10) / 10:.1f}" if value < 10 else f"{int(value)}"
            return f"{shown.removesuffix('.0')} {unit}"
    raise AssertionError("unreachable")

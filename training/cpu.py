"""What this machine's CPUs offer training: their flags, bf16 matrix units, cores
(issue 50). No PyTorch needed."""

from __future__ import annotations

import os
import pathlib

#: The CPU flags that say which units a CPU training step can use.
FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile", "amx_int8")


def cpu_flags() -> set[str]:
    """The flags of /proc/cpuinfo's first processor (empty where there is none)."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def cpu_model() -> str:
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return "unknown"
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown"


def has_bf16(flags: set[str] | None = None) -> bool:
    """Whether the CPU multiplies bf16 matrices in hardware (AMX or AVX-512 BF16)."""
    flags = cpu_flags() if flags is None else flags
    return bool({"amx_bf16", "avx512_bf16"} & flags)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1

"""What this machine's CPUs offer training: their flags, bf16 matrix units, cores
(issue 50). No PyTorch needed."""

from __future__ import annotations

import ctypes
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


def quiet_waits() -> None:
    """Threads that wait sleep instead of spinning (``OMP_WAIT_POLICY=PASSIVE``, unless set):
    on a machine shared with other processes, OpenMP's spinning threads took half the CPU
    time of a 2-thread training step (docs/benchmarks.md, issue 50). Call it before
    ``import torch``: OpenMP reads it when it loads."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def blas_in_use() -> list[str]:
    """The BLAS libraries mapped into this process (after PyTorch has multiplied once)."""
    try:
        maps = pathlib.Path("/proc/self/maps").read_text(encoding="utf-8")
    except OSError:
        return []
    return sorted({line.split()[-1] for line in maps.splitlines()
                   if "blas" in line.rsplit("/", 1)[-1].lower() and "/" in line})


def blas_threads(count: int) -> bool:
    """OpenBLAS's own thread pool set to ``count`` (PyTorch's ``set_num_threads`` leaves the
    pool of a system OpenBLAS at one thread per core, which then competes with PyTorch's
    own threads); whether an OpenBLAS was found to set."""
    done = False
    for path in blas_in_use():
        try:
            setter = ctypes.CDLL(path).openblas_set_num_threads
        except (OSError, AttributeError):
            continue
        setter(ctypes.c_int(count))
        done = True
    return done

"""What the benchmarks share: the machine they ran on, and their section of
docs/benchmarks.md (each bench replaces only its own section)."""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

from bench.common import REPO

DOCS = REPO / "docs" / "benchmarks.md"


def _proc(path: str, pattern: str) -> str | None:
    try:
        match = re.search(pattern, Path(path).read_text(), re.MULTILINE)
    except OSError:
        return None
    return match.group(1).strip() if match else None


def cpu_model() -> str:
    return _proc("/proc/cpuinfo", r"^model name\s*:\s*(.+)$") or platform.machine() or "unknown"


def ram() -> str:
    kib = _proc("/proc/meminfo", r"^MemTotal:\s*(\d+)")
    return f"{int(kib) / 1024 / 1024:.1f} GiB" if kib else "unknown"


def basics() -> dict[str, str]:
    """CPU, cores, RAM, OS and Python, for a bench's machine table."""
    return {"CPU": cpu_model(), "Cores": str(os.cpu_count()), "RAM": ram(),
            "OS": f"{platform.system()} {platform.release()}",
            "Python": platform.python_version()}


def write_section(section: str, text: str, docs: Path = DOCS) -> None:
    """Replace (or append) the ``section`` heading's part of docs/benchmarks.md."""
    docs.parent.mkdir(parents=True, exist_ok=True)
    current = docs.read_text() if docs.exists() else "# Benchmarks\n"
    pattern = re.compile(rf"^{re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    if pattern.search(current):
        updated = pattern.sub(lambda _m: text.rstrip("\n") + "\n\n", current, count=1)
    else:
        updated = current.rstrip("\n") + "\n\n" + text
    docs.write_text(updated.rstrip("\n") + "\n")


def remove_section(section: str, docs: Path = DOCS) -> None:
    """Drop the ``section`` heading's part of docs/benchmarks.md (a renamed section)."""
    if not docs.exists():
        return
    pattern = re.compile(rf"^{re.escape(section)}\n.*?(?=^## |\Z)", re.S | re.M)
    docs.write_text(pattern.sub("", docs.read_text(), count=1).rstrip("\n") + "\n")


def summary_line() -> str:
    """The machine and its load average in one line, for a section's last paragraph."""
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    return ("Machine: " + ", ".join(f"{k} {v}" for k, v in basics().items())
            + f"; load average {load} (other jobs share the 2 cores: times are inflated)")


def write_section_if(wanted: bool, section: str, text: str) -> None:
    """``write_section`` when the bench was asked to (``--write-docs``), and say so."""
    if wanted:
        write_section(section, text)
        print(f"wrote the '{section[3:]}' section of {DOCS.relative_to(REPO)}")

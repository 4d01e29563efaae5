"""citerun: verify the citations of academic theses against their sources."""

from importlib import metadata as _metadata

try:
    __version__ = _metadata.version("citerun")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a bare checkout
    __version__ = "0.0.0"

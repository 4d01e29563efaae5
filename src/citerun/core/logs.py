"""JSON log lines that survive any ``extra`` (kopf's included).

kopf's per-object logger adds ``settings`` (its OperatorSettings, a dataclass holding
asyncio objects), ``k8s_skip`` and ``k8s_ref`` to every record. python-json-logger
serialises a dataclass with ``dataclasses.asdict``, a deep copy that raises "cannot
pickle", and logging then prints a traceback instead of the line. This formatter keeps
the object reference (kind, namespace, name, uid), drops kopf's internals, and turns any
other value it cannot encode into its ``repr``, so every record is one JSON line.
"""

from __future__ import annotations

import logging
from typing import Any

from pythonjsonlogger.json import JsonFormatter

# Extras kopf adds for its own machinery; none is a useful log field.
_DROPPED = frozenset({"settings", "k8s_skip"})


def _default(value: Any) -> Any:
    """Encode what json cannot: dates as ISO text, sets as lists, everything else as its
    repr (never a deep copy of the object)."""
    isoformat = getattr(value, "isoformat", None)
    if callable(isoformat):
        return isoformat()
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)


class SafeJsonFormatter(JsonFormatter):
    """One JSON object per record, whatever its extras hold."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("json_default", _default)
        super().__init__(*args, **kwargs)

    def add_fields(self, log_data: dict[str, Any], record: logging.LogRecord,
                   message_dict: dict[str, Any]) -> None:
        super().add_fields(log_data, record, message_dict)
        for key in _DROPPED & log_data.keys():
            del log_data[key]
        ref = log_data.get("k8s_ref")
        if isinstance(ref, dict):
            log_data["k8s_ref"] = {k: str(ref[k]) for k in
                                   ("apiVersion", "kind", "namespace", "name", "uid")
                                   if ref.get(k) is not None}


def json_formatter() -> logging.Formatter:
    """The formatter of ``--log-format json``: time, level, logger, message, extras."""
    return SafeJsonFormatter(
        "%(asctime)s %(levelname)s %(name)s %(message)s",
        rename_fields={"asctime": "time", "levelname": "level", "name": "logger"})

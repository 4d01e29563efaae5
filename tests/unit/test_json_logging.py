"""JSON logs survive kopf's extras (issue 12, attack 8).

kopf's per-object logger puts its OperatorSettings (a dataclass holding asyncio objects)
and the object reference into every record's ``extra``; python-json-logger turned the
dataclass into a dict with a deep copy, which raised "cannot pickle", and logging printed
a "--- Logging error ---" traceback instead of the line. This runs the operator's real
logging set-up (``citerun.cli.main.configure_logging``) and kopf's real ObjectLogger in a
child process and parses every line of its stderr as JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import asyncio, logging
    import kopf
    from kopf._core.actions import loggers
    from citerun.cli.main import configure_logging

    configure_logging("DEBUG", "json")

    async def main() -> None:
        settings = kopf.OperatorSettings()
        body = kopf.Body({"apiVersion": "citerun.dev/v1alpha1", "kind": "CitationRun",
                          "metadata": {"name": "demo", "namespace": "team-a",
                                       "uid": "1234"}})
        logger = loggers.ObjectLogger(body=body, settings=settings)
        for i in range(200):
            logger.info("Handler 'admit' succeeded %d", i)
            logger.debug("with extra", extra={"action": "admit", "n": i})
        logging.getLogger("plain").warning("plain record", extra={"task_id": 7})
        try:
            raise ValueError("boom")
        except ValueError:
            logger.exception("handler failed")
        loggers.logger.info("kopf's own logger")

    asyncio.run(main())
""")


def test_operator_json_logs_parse_line_by_line() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) >= 403, done.stderr[-3000:]
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:  # pragma: no cover - the failure being tested
            raise AssertionError(f"not JSON: {line!r}\n{done.stderr[-2000:]}") from None
    messages = [r["message"] for r in records]
    assert "Handler 'admit' succeeded 199" in messages
    first = next(r for r in records if r["message"] == "Handler 'admit' succeeded 0")
    assert first["level"] == "INFO" and first["k8s_ref"]["name"] == "demo"
    assert first["k8s_ref"]["namespace"] == "team-a"
    assert "settings" not in first  # kopf's settings object is not a log field
    extra = next(r for r in records if r["message"] == "with extra" and r.get("n") == 3)
    assert extra["action"] == "admit"
    assert next(r for r in records if r["message"] == "plain record")["task_id"] == 7
    failed = next(r for r in records if r["message"] == "handler failed")
    assert "ValueError: boom" in failed["exc_info"]

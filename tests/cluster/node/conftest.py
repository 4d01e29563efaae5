"""The ``node`` fixture: one real single-node cluster per test module (node.py); the
node tests live in one module, so the node is up only while they run.

Building it is a one-off of many minutes (binaries and images are cached under
~/.cache/citerun/k8s, a second run starts in well under a minute); starting it takes
tens of seconds. It needs root (network interfaces, iptables, cgroups, mounts) and a few
Debian packages (scripts/test installs them). When it cannot be had the tests skip with
the reason, except in CI (``CI=true``), where that is a failure.
"""

from __future__ import annotations

import fcntl
import os
import pathlib
import subprocess
import sys
from collections.abc import Iterator

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import node as node_mod  # noqa: E402


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


NODE_LOCK = pathlib.Path("/run/citerun-node.lock")


@pytest.fixture(scope="module")
def node() -> Iterator[node_mod.Node]:
    # One node per machine, and building it costs many minutes of both cores: only the
    # project's test command (scripts/test sets CITERUN_NODE_TESTS=1) and CI run it, not
    # every ad-hoc pytest run of the tree.
    if os.environ.get("CITERUN_NODE_TESTS") != "1" and os.environ.get("CI") != "true":
        pytest.skip("real-node tests run from scripts/test (CITERUN_NODE_TESTS=1) or in CI")
    lock = NODE_LOCK.open("w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.close()
        _unavailable("the real node is in use by another test session on this machine")
    try:
        yield from _node()
    finally:
        lock.close()


def _node() -> Iterator[node_mod.Node]:
    if os.geteuid() != 0:
        _unavailable("the real node needs root (interfaces, iptables, cgroups, mounts)")
    missing = node_mod.missing_host_tools()
    if missing:
        _unavailable(f"the real node needs Debian packages: {' '.join(missing)}")
    try:
        bin_dir, images_dir = node_mod.build()
        cluster = node_mod.Node(bin_dir=bin_dir, images_dir=images_dir)
        cluster.start()
        import support

        imported = sum(v for k, v in cluster.timings.items() if k.startswith("import "))
        support.figure("node start: nothing -> node Ready", cluster.timings["node Ready s"],
                       "s", f"etcd, apiserver, containerd, controllers, kubelet; "
                       f"{imported:.0f} s of it importing changed image archives")
    except (node_mod.NodeError, node_mod.controlplane.ControlPlaneError, OSError,
            subprocess.SubprocessError) as err:
        _unavailable(f"no real node: {err}")
        raise  # unreachable
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """On a failing node test, append the tails of the node's logs to the report."""
    report = yield
    if report.failed and "node" in getattr(item, "fixturenames", ()):
        cluster = item.funcargs.get("node") if hasattr(item, "funcargs") else None
        if isinstance(cluster, node_mod.Node):
            report.sections.append(("node logs", cluster.log_tail(25)))
    return report


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The figures the node tests measured, as a table (docs/benchmarks.md quotes them)."""
    import support

    if not support.FIGURES:
        return
    terminalreporter.section("real-node figures")
    terminalreporter.write_line(f"| {'what':<52} | {'value':>8} | how |")
    terminalreporter.write_line(f"| {'-' * 52} | {'-' * 8} | --- |")
    for name, (value, unit, how) in support.FIGURES.items():
        terminalreporter.write_line(f"| {name:<52} | {value:>6.1f} {unit[:1] if unit == 's' else ''}| {how} |")
    terminalreporter.write_line(f"(also in {support.FIGURES_FILE})")

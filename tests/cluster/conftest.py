"""Fixtures for tests against a real control plane (etcd + kube-apiserver).

``control_plane`` is one control plane per session: building the binaries is a
one-off of many minutes (build.sh caches them outside the repo), starting them takes
seconds, and tests stay independent through ``namespace``, a fresh namespace per test.
When the control plane cannot be had the tests skip with the reason, except in CI
(``CI=true``), where that is a failure: a green CI must have run them.
"""

from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys
import uuid
from collections.abc import Generator, Iterator

import pytest
from kubernetes import client as k8s

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import controlplane  # noqa: E402

_PLANE = pytest.StashKey["controlplane.ControlPlane"]()


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def control_plane(pytestconfig: pytest.Config) -> Iterator[controlplane.ControlPlane]:
    """etcd + kube-apiserver for the whole session; see controlplane.ControlPlane.

    Runs build.sh first: a no-op when the binaries for versions.env are there, a cold
    build of ~20 minutes otherwise (CI runs build.sh before pytest, so its output is
    seen).
    """
    try:
        bin_dir = controlplane.build()
        plane = controlplane.ControlPlane(bin_dir=bin_dir)
        plane.start()
    except (controlplane.ControlPlaneError, OSError, subprocess.SubprocessError) as err:
        _unavailable(f"no test control plane: {err}")
        raise  # unreachable: _unavailable raises
    pytestconfig.stash[_PLANE] = plane
    try:
        yield plane
    finally:
        del pytestconfig.stash[_PLANE]
        plane.stop()


@pytest.fixture
def namespace(
    control_plane: controlplane.ControlPlane, request: pytest.FixtureRequest
) -> Iterator[str]:
    """A fresh namespace (with its ``default`` ServiceAccount), deleted after the test."""
    slug = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower()).strip("-")[:40]
    name = f"{slug.rstrip('-')}-{uuid.uuid4().hex[:6]}"
    control_plane.create_namespace(name)
    yield name
    control_plane.delete_namespace(name)


@pytest.fixture
def crd(control_plane: controlplane.ControlPlane) -> str:
    """The CitationRun CRD applied (idempotent) and served; its name."""
    import chart_support

    chart_support.ensure_crd(control_plane)
    return chart_support.CRD_NAME


@pytest.fixture
def api_client(control_plane: controlplane.ControlPlane) -> Iterator[k8s.ApiClient]:
    """The admin's kubernetes ApiClient, closed after the test."""
    with control_plane.client() as api:
        yield api


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """On a failed cluster test, add the tail of the etcd and apiserver logs."""
    report = yield
    if report.failed and "control_plane" in getattr(item, "fixturenames", ()):
        plane = item.config.stash.get(_PLANE, None)
        if plane is not None:
            report.sections.append(("control plane logs", plane.log_tail(40)))
    return report

"""Helpers of the real-node tests: the README's commands, the chart's release on the
node, the database through its Service, following pod logs, and the figures the tests
measure (printed as a table at the end of the session and kept in a JSON file)."""

from __future__ import annotations

import json
import pathlib
import re
import shlex
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import node as node_mod

REPO = pathlib.Path(__file__).resolve().parents[3]
README = REPO / "README.md"
EXAMPLES = REPO / "examples"
NAMESPACE = "citerun"
RELEASE = "citerun"
PV_DIR = node_mod.PV_ROOT / "postgresql"

# What the node tests add to the README's `helm install`: the images built here (a
# user pushes theirs to a registry and sets the same two values), and requests that fit
# a 2-core node. Timing knobs are set by each test.
LOCAL_VALUES = {
    "image.repository": node_mod.APP_IMAGE.rsplit(":", 1)[0],
    "image.tag": node_mod.APP_IMAGE.rsplit(":", 1)[1],
    "postgresql.image.repository": node_mod.POSTGRES_IMAGE.rsplit(":", 1)[0],
    "postgresql.image.tag": node_mod.POSTGRES_IMAGE.rsplit(":", 1)[1],
    "workers.resources.requests.cpu": "100m",
    "workers.resources.requests.memory": "256Mi",
    "postgresql.resources.requests.cpu": "100m",
}

T = TypeVar("T")

# Figures measured by the tests: name -> (value, unit, how). Printed by conftest.
FIGURES: dict[str, tuple[float, str, str]] = {}
FIGURES_FILE = node_mod._cache_root() / "node-figures.json"


def figure(name: str, value: float, unit: str, how: str) -> None:
    FIGURES[name] = (value, unit, how)
    old = json.loads(FIGURES_FILE.read_text()) if FIGURES_FILE.is_file() else {}
    old[name] = {"value": value, "unit": unit, "how": how, "at": time.strftime("%F %T")}
    FIGURES_FILE.write_text(json.dumps(old, indent=1))


def readme_kubernetes_commands() -> list[str]:
    """The shell lines of the README's "On Kubernetes" code block (comments dropped)."""
    text = README.read_text()
    section = text.split("## On Kubernetes", 1)[1]
    block = section.split("```sh", 1)[1].split("```", 1)[0]
    return [line.strip() for line in block.splitlines()
            if line.strip() and not line.strip().startswith("#")]


def readme_command(startswith: str, contains: str = "") -> list[str]:
    lines = [c for c in readme_kubernetes_commands()
             if c.startswith(startswith) and contains in c]
    assert len(lines) == 1, f"README: {len(lines)} lines start with {startswith!r}: {lines}"
    return shlex.split(lines[0])


def set_args(values: dict[str, object]) -> list[str]:
    args: list[str] = []
    for key, value in values.items():
        flag = "--set-string" if isinstance(value, str) else "--set-json"
        args += [flag, f"{key}={value if isinstance(value, str) else json.dumps(value)}"]
    return args


def run_tool(node: node_mod.Node, argv: list[str], timeout: float = 600) -> str:
    """Run a README command line (``helm ...``/``kubectl ...``) from the repository root
    with the node's kubeconfig and tools first on PATH."""
    proc = subprocess.run(argv, cwd=REPO, env=node.plane.tool_env(), capture_output=True,
                          text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}:\n{proc.stderr}")
    return proc.stdout


def eventually(check: Callable[[], T | None], timeout: float, what: str,
               logs: Callable[[], str] = lambda: "", interval: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    last = ""
    while time.monotonic() < deadline:
        try:
            value = check()
            if value:
                return value
        except (AssertionError, subprocess.SubprocessError, node_mod.NodeError) as err:
            last = str(err)[-500:]
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what} ({last})\n"
                         f"{logs()[-12000:]}")


def make_postgres_volume(node: node_mod.Node) -> None:
    """A hostPath PersistentVolume for the StatefulSet's claim: this cluster has no
    StorageClass (a user's cluster has a default one that provisions it)."""
    import shutil
    shutil.rmtree(PV_DIR, ignore_errors=True)
    PV_DIR.mkdir(parents=True)
    import os
    os.chown(PV_DIR, 999, 999)
    pv = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": "citerun-node-pv"},
        "spec": {"capacity": {"storage": "8Gi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain",
                 "hostPath": {"path": str(PV_DIR), "type": "Directory"}},
    }
    node.kubectl("delete", "pv", "citerun-node-pv", "--ignore-not-found", "--wait=false")
    path = node.workdir / "pv.json"
    path.write_text(json.dumps(pv))
    node.kubectl("apply", "-f", str(path))


def database_url(node: node_mod.Node) -> str:
    """The bundled Postgres through its Service's ClusterIP (routed from the host out of
    the node's own interface; kube-proxy DNATs it to the pod), with the chart's password."""
    import base64
    secret = json.loads(node.kubectl("get", "secret", "-n", NAMESPACE,
                                     f"{RELEASE}-postgresql", "-o", "json"))
    password = base64.b64decode(secret["data"]["password"]).decode()
    user = base64.b64decode(secret["data"]["username"]).decode()
    ip = node.kubectl("get", "svc", "-n", NAMESPACE, f"{RELEASE}-postgresql", "-o",
                      "jsonpath={.spec.clusterIP}").strip()
    return f"postgresql://{user}:{password}@{ip}:5432/citerun"


def pods(node: node_mod.Node, component: str) -> list[dict[str, Any]]:
    out = node.kubectl("get", "pods", "-n", NAMESPACE, "-o", "json", "-l",
                       f"app.kubernetes.io/component={component}")
    items: list[dict[str, Any]] = json.loads(out)["items"]
    return items


def ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def deployment(node: node_mod.Node, name: str) -> dict[str, Any]:
    obj: dict[str, Any] = json.loads(node.kubectl("get", "deploy", "-n", NAMESPACE, name,
                                                  "-o", "json"))
    return obj


class LogFollower:
    """``kubectl logs -f`` of every pod of a component as it appears, into one file per
    pod, so the logs of a pod stay readable after the pod is deleted."""

    def __init__(self, node: node_mod.Node, component: str, directory: pathlib.Path) -> None:
        self.node, self.component, self.dir = node, component, directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> LogFollower:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        for proc in self._procs.values():
            if proc.poll() is None:
                proc.terminate()
                proc.wait(10)

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                for pod in pods(self.node, self.component):
                    name = pod["metadata"]["name"]
                    statuses = (pod.get("status") or {}).get("containerStatuses") or []
                    started = any("running" in (s.get("state") or {}) or
                                  "terminated" in (s.get("state") or {}) for s in statuses)
                    if started and name not in self._procs:
                        with (self.dir / f"{name}.log").open("ab") as out:
                            self._procs[name] = subprocess.Popen(
                                [str(self.node.bin_dir / "kubectl"), "logs", "-f", "-n",
                                 NAMESPACE, name], stdout=out, stderr=subprocess.STDOUT,
                                env=self.node.plane.tool_env())
            except (node_mod.controlplane.ControlPlaneError, node_mod.NodeError, ValueError,
                    OSError, subprocess.SubprocessError):
                pass  # a slow or failed listing: try again (the thread must outlive it)
            self._stop.wait(0.5)

    def text(self, pod: str | None = None) -> str:
        files = [self.dir / f"{pod}.log"] if pod else sorted(self.dir.glob("*.log"))
        return "\n".join(f"--- {f.stem}\n{f.read_text(errors='replace')}" for f in files
                         if f.exists())

    def lines(self, pattern: str) -> list[tuple[str, str]]:
        found = []
        for f in sorted(self.dir.glob("*.log")):
            for line in f.read_text(errors="replace").splitlines():
                if re.search(pattern, line):
                    found.append((f.stem, line))
        return found


class AnnotationWatch:
    """``kubectl get pods --watch`` of a component, recording the last value of one
    annotation each pod carried: every update the API server sends, so a value a pod had
    only for the second before it was deleted is seen too (polling could miss it)."""

    def __init__(self, node: node_mod.Node, component: str, annotation: str,
                 path: pathlib.Path) -> None:
        self.node, self.component, self.path = node, component, path
        key = annotation.replace(".", "\\.")
        self._template = f'{{.metadata.name}} {{.metadata.annotations.{key}}}{{"\\n"}}'
        self._proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> AnnotationWatch:
        with self.path.open("wb") as out:
            self._proc = subprocess.Popen(
                [str(self.node.bin_dir / "kubectl"), "get", "pods", "-n", NAMESPACE,
                 "--watch", "-l", f"app.kubernetes.io/component={self.component}",
                 "-o", f"jsonpath={self._template}"],
                stdout=out, stderr=subprocess.STDOUT, env=self.node.plane.tool_env())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            self._proc.wait(10)

    def last(self) -> dict[str, str]:
        """Pod name -> the annotation's last non-empty value seen."""
        values: dict[str, str] = {}
        for line in self.path.read_text(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0].startswith(f"{RELEASE}-{self.component}-"):
                values[parts[0]] = parts[1]
        return values

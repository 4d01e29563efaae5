"""A real Kubernetes control plane for tests: etcd and kube-apiserver on loopback.

Why only these two processes: they are what makes the API real (server-side
validation of CRD schemas, the status and scale subresources, watches, RBAC,
TokenRequest, admission), and they start in seconds on a 2-core machine. Nothing
else runs, so:

- no kube-controller-manager: a Deployment is stored, validated and scalable, but no
  ReplicaSet or Pod is ever made from it; no garbage collection of ownerReferences;
  no ``default`` ServiceAccount or ``kube-root-ca.crt`` ConfigMap appears in a new
  namespace; a deleted namespace is never emptied nor finalized by itself;
- no scheduler and no kubelet: Pods stay Pending with no node.

Tests act as the controller or kubelet where they need one (create the Pods, patch
their status). :meth:`ControlPlane.create_namespace` and
:meth:`ControlPlane.delete_namespace` do the namespace controller's part: the
``default`` ServiceAccount on creation (the ServiceAccount admission plugin rejects
Pods without it), and emptying then finalizing the namespace on deletion.

The binaries come from ``build.sh`` (versions in ``versions.env``); TLS material
(a CA, the serving certificate, the admin client certificate in group
``system:masters``, the service-account signing key) is generated per instance with
``cryptography``. The apiserver runs with ``--authorization-mode=RBAC``, so an
identity other than the admin gets exactly what RBAC grants it:
:meth:`ControlPlane.service_account_token` gives a ServiceAccount's token to prove it.
"""

from __future__ import annotations

import base64
import contextlib
import ctypes
import datetime
import ipaddress
import json
import os
import pathlib
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID
from kubernetes import client as k8s

HERE = pathlib.Path(__file__).resolve().parent
VERSIONS_FILE = HERE / "versions.env"
BUILD_SCRIPT = HERE / "build.sh"

SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
SERVICE_ACCOUNT_ISSUER = "https://kubernetes.default.svc.cluster.local"
ADMIN_USER = "citerun-admin"


class ControlPlaneError(RuntimeError):
    """The test control plane could not be built or started."""


def read_versions(path: pathlib.Path = VERSIONS_FILE) -> dict[str, str]:
    """Parse versions.env: ``KEY=value`` lines, ``#`` comments, no shell expansion."""
    versions: dict[str, str] = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep:
            raise ControlPlaneError(f"{path}: not KEY=value: {line!r}")
        versions[key.strip()] = value.strip().strip("'\"")
    return versions


def default_bin_dir(versions: dict[str, str] | None = None) -> pathlib.Path:
    """Where build.sh puts the binaries for the pinned Kubernetes version."""
    versions = versions or read_versions()
    cache = os.environ.get("CITERUN_K8S_CACHE") or str(
        pathlib.Path.home() / ".cache" / "citerun" / "k8s"
    )
    return pathlib.Path(cache) / versions["KUBERNETES_VERSION"] / "bin"


BINARIES = ("etcd", "kube-apiserver", "kubectl", "helm")


def build(timeout: float = 3600) -> pathlib.Path:
    """Run build.sh (a no-op in well under a second when up to date); return bin dir."""
    return run_script(BUILD_SCRIPT, timeout=timeout, error=ControlPlaneError)


def run_script(path: pathlib.Path, *args: str, timeout: float,
               error: type[Exception]) -> pathlib.Path:
    """Run a build script (progress on stderr, its tail in ``error`` on failure); return
    the path its last stdout line names."""
    proc = subprocess.run(["bash", str(path), *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise error(f"{path.name} exited {proc.returncode}:\n{_tail(proc.stderr, 40)}")
    return pathlib.Path(proc.stdout.strip().splitlines()[-1])


def free_port() -> int:
    """A loopback TCP port that was free a moment ago (the usual small race)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGKILL it when the test process dies, so an
    aborted session leaves no etcd or apiserver behind (Linux PR_SET_DEATHSIG)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


def stop_process(proc: subprocess.Popen[bytes] | None, *, grace_s: float) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``; nothing for a process gone or never started."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def spawn_logged(binary: pathlib.Path, args: list[str], workdir: pathlib.Path,
                 logs: dict[str, pathlib.Path], name: str,
                 env: dict[str, str] | None = None) -> subprocess.Popen[bytes]:
    """Start ``binary`` in ``workdir``, its output appended to ``workdir/NAME.log`` (recorded
    in ``logs``); it dies with this process."""
    log_path = workdir / f"{name}.log"
    logs[name] = log_path
    with log_path.open("ab") as log:
        return subprocess.Popen(
            [str(binary), *args], stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, cwd=workdir, env=env,
            # prctl only, no locks taken: safe even if the parent has threads.
            preexec_fn=_die_with_parent)


def _call(api: k8s.ApiClient, method: str, path: str) -> Any:
    """A raw JSON request through ``api`` (its credentials, its TLS settings);
    raises ``ApiException`` on a non-2xx answer like the typed methods do."""
    method, url, headers, body, post_params = api.param_serialize(
        method=method,
        resource_path=path,
        header_params={"Accept": "application/json"},
        auth_settings=["BearerToken"],
    )
    response = api.call_api(method, url, header_params=headers, body=body)
    response.read()  # type: ignore[no-untyped-call]
    if not 200 <= response.status < 300:
        raise k8s.ApiException(http_resp=response)
    return json.loads(response.data) if response.data else None


# --- TLS material ------------------------------------------------------------------


@dataclass(frozen=True)
class _Pki:
    ca_cert: bytes
    serving_cert: bytes
    serving_key: bytes
    admin_cert: bytes
    admin_key: bytes
    sa_key: bytes
    sa_pub: bytes


def _pem_key(key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _make_pki(address: str = "127.0.0.1") -> _Pki:
    now = datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(hours=1), now + datetime.timedelta(days=2)

    def cert(
        subject: x509.Name,
        key: ec.EllipticCurvePrivateKey,
        issuer: x509.Name,
        issuer_key: ec.EllipticCurvePrivateKey,
        *,
        ca: bool = False,
        usage: list[x509.ObjectIdentifier] | None = None,
        sans: list[x509.GeneralName] | None = None,
    ) -> x509.Certificate:
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(issuer)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=not ca,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=ca,
                    crl_sign=ca,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
        )
        if usage:
            builder = builder.add_extension(x509.ExtendedKeyUsage(usage), critical=False)
        if sans:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(sans), critical=False
            )
        return builder.sign(issuer_key, hashes.SHA256())

    pem = serialization.Encoding.PEM
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "citerun-test-ca")])
    ca = cert(ca_name, ca_key, ca_name, ca_key, ca=True)

    serving_key = ec.generate_private_key(ec.SECP256R1())
    service_ip = next(ipaddress.IPv4Network(SERVICE_CLUSTER_IP_RANGE).hosts())
    sans: list[x509.GeneralName] = [
        x509.DNSName(name)
        for name in (
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        )
    ]
    sans += [
        x509.IPAddress(ipaddress.ip_address(ip))
        for ip in dict.fromkeys(("127.0.0.1", address, str(service_ip)))
    ]
    serving = cert(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "kube-apiserver")]),
        serving_key,
        ca_name,
        ca_key,
        usage=[x509.oid.ExtendedKeyUsageOID.SERVER_AUTH],
        sans=sans,
    )

    admin_key = ec.generate_private_key(ec.SECP256R1())
    admin = cert(
        x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "system:masters"),
                x509.NameAttribute(NameOID.COMMON_NAME, ADMIN_USER),
            ]
        ),
        admin_key,
        ca_name,
        ca_key,
        usage=[x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH],
    )

    # RS256 is what every service-account token consumer is sure to accept.
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return _Pki(
        ca_cert=ca.public_bytes(pem),
        serving_cert=serving.public_bytes(pem),
        serving_key=_pem_key(serving_key),
        admin_cert=admin.public_bytes(pem),
        admin_key=_pem_key(admin_key),
        sa_key=_pem_key(sa_key),
        sa_pub=sa_key.public_key().public_bytes(
            pem, serialization.PublicFormat.SubjectPublicKeyInfo
        ),
    )


# --- the control plane ---------------------------------------------------------------


@dataclass
class ControlPlane:
    """etcd + kube-apiserver on loopback, in a private temporary directory.

    Use as a context manager, or call :meth:`start` and :meth:`stop`. After start:
    ``server`` is the https URL, ``kubeconfig`` an admin kubeconfig file (user
    ``citerun-admin`` in group ``system:masters``), ``bin_dir`` holds ``kubectl`` and
    ``helm`` too. Logs go to ``etcd.log`` and ``kube-apiserver.log`` in ``workdir``
    (a temporary directory unless given, removed by :meth:`stop` unless
    ``CITERUN_KEEP_CONTROL_PLANE`` is set); :meth:`log_tail` returns the end of both.
    """

    bin_dir: pathlib.Path = field(default_factory=default_bin_dir)
    workdir: pathlib.Path | None = None
    startup_timeout: float = 120.0
    extra_apiserver_args: list[str] = field(default_factory=list)
    # Where the apiserver listens and what it advertises (the `kubernetes` Service's
    # endpoint); a real node's pods need an address they can route to (node/node.py).
    address: str = "127.0.0.1"
    port: int = 0  # 0: a free port

    server: str = field(init=False, default="")
    kubeconfig: pathlib.Path = field(init=False, default=pathlib.Path())
    startup_seconds: float = field(init=False, default=0.0)
    etcd_url: str = field(init=False, default="")
    _procs: dict[str, subprocess.Popen[bytes]] = field(init=False, default_factory=dict)
    _logs: dict[str, pathlib.Path] = field(init=False, default_factory=dict)
    _own_workdir: bool = field(init=False, default=False)
    _pki: _Pki | None = field(init=False, default=None)

    # -- life cycle --

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        """Start etcd, then kube-apiserver; return once ``/readyz`` says ok."""
        missing = [b for b in BINARIES if not (self.bin_dir / b).is_file()]
        if missing:
            raise ControlPlaneError(f"missing in {self.bin_dir}: {', '.join(missing)}")
        if self.workdir is None:
            self.workdir = pathlib.Path(tempfile.mkdtemp(prefix="citerun-k8s-"))
            self._own_workdir = True
        self.workdir.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        try:
            self._write_pki()
            for attempt in range(1, 4):
                try:
                    self._start_etcd()
                    self._start_apiserver()
                    break
                except ControlPlaneError as err:
                    # free_port() races with anything else binding ports meanwhile.
                    if "address already in use" not in str(err) or attempt == 3:
                        raise
                    self._stop_processes()
                    shutil.rmtree(self.workdir / "etcd-data", ignore_errors=True)
            self._write_kubeconfig(self.kubeconfig)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - began

    def stop(self) -> None:
        """Stop the apiserver, then etcd, and remove the work directory if it was
        made here (set CITERUN_KEEP_CONTROL_PLANE=1 to keep keys, data and logs)."""
        self._stop_processes()
        if self._own_workdir and self.workdir is not None:
            if os.environ.get("CITERUN_KEEP_CONTROL_PLANE"):
                return
            shutil.rmtree(self.workdir, ignore_errors=True)
            self._logs.clear()

    def _stop_processes(self) -> None:
        """SIGTERM, then SIGKILL after 10 s: the apiserver first, then etcd."""
        for name in ("kube-apiserver", "etcd"):
            stop_process(self._procs.pop(name, None), grace_s=10)

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` lines of the etcd and the apiserver log, headed by name."""
        parts = []
        for name, path in self._logs.items():
            try:
                text = path.read_text(errors="replace")
            except OSError as err:
                text = f"<cannot read {path}: {err}>"
            parts.append(f"----- {name} ({path}), last {lines} lines -----\n{_tail(text, lines)}")
        return "\n".join(parts)

    # -- clients and identities --

    def api_client(self, token: str | None = None) -> k8s.ApiClient:
        """A kubernetes ApiClient: the admin's, or a bearer token's (e.g. a
        ServiceAccount's from :meth:`service_account_token`). Close it after use."""
        assert self._pki is not None and self.workdir is not None, "not started"
        config = k8s.Configuration()
        config.host = self.server
        config.ssl_ca_cert = str(self.workdir / "ca.crt")
        if token is None:
            config.cert_file = str(self.workdir / "admin.crt")
            config.key_file = str(self.workdir / "admin.key")
        else:
            config.api_key = {"authorization": f"Bearer {token}"}
        return k8s.ApiClient(config)

    @contextlib.contextmanager
    def client(self, token: str | None = None) -> Iterator[k8s.ApiClient]:
        """:meth:`api_client` as a context manager that closes it."""
        api = self.api_client(token)
        try:
            yield api
        finally:
            api.close()  # type: ignore[no-untyped-call]

    def service_account_token(
        self,
        namespace: str,
        name: str,
        *,
        create: bool = True,
        expiration_seconds: int = 3600,
    ) -> str:
        """A token for ServiceAccount ``namespace/name`` from the TokenRequest API
        (creating the account first when ``create``). It has no permissions but
        what RBAC bindings give it."""
        with self.client() as api:
            core = k8s.CoreV1Api(api)
            if create:
                try:
                    core.create_namespaced_service_account(
                        namespace, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name=name))
                    )
                except k8s.ApiException as err:
                    if err.status != 409:
                        raise
            request = k8s.AuthenticationV1TokenRequest(
                spec=k8s.V1TokenRequestSpec(
                    audiences=[SERVICE_ACCOUNT_ISSUER],
                    expiration_seconds=expiration_seconds,
                )
            )
            response = core.create_namespaced_service_account_token(name, namespace, request)
            if response.status is None:
                raise ControlPlaneError(f"TokenRequest for {namespace}/{name}: no status")
            return str(response.status.token)

    def write_kubeconfig(self, path: pathlib.Path, *, token: str | None = None) -> pathlib.Path:
        """Write a kubeconfig for the admin, or for a bearer token, to ``path``
        (for subprocesses: kubectl, helm, an operator run as a ServiceAccount)."""
        self._write_kubeconfig(path, token=token)
        return path

    # -- command-line tools --

    def tool_env(self) -> dict[str, str]:
        """Environment for kubectl/helm subprocesses: this cluster's admin kubeconfig,
        ``bin_dir`` first on PATH, and helm's state under ``workdir``."""
        assert self.workdir is not None, "not started"
        env = dict(os.environ)
        env["KUBECONFIG"] = str(self.kubeconfig)
        env["PATH"] = f"{self.bin_dir}{os.pathsep}{env.get('PATH', '')}"
        for var, sub in (
            ("HELM_CACHE_HOME", "helm/cache"),
            ("HELM_CONFIG_HOME", "helm/config"),
            ("HELM_DATA_HOME", "helm/data"),
        ):
            env[var] = str(self.workdir / sub)
        return env

    def run_tool(
        self, tool: str, *args: str, check: bool = True, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run ``kubectl`` or ``helm`` from ``bin_dir`` against this cluster."""
        proc = subprocess.run(
            [str(self.bin_dir / tool), *args],
            env=self.tool_env(),
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and proc.returncode != 0:
            raise ControlPlaneError(
                f"{tool} {' '.join(args)} exited {proc.returncode}:\n{proc.stderr}"
            )
        return proc

    def kubectl(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl ARGS`` as the admin; raises ControlPlaneError on failure if check."""
        return self.run_tool("kubectl", *args, check=check)

    def helm(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        """``helm ARGS`` as the admin; raises ControlPlaneError on failure if check."""
        return self.run_tool("helm", *args, check=check, timeout=300)

    # -- namespaces (the namespace controller's part) --

    def create_namespace(self, name: str) -> None:
        """Create a namespace and its ``default`` ServiceAccount."""
        with self.client() as api:
            core = k8s.CoreV1Api(api)
            core.create_namespace(k8s.V1Namespace(metadata=k8s.V1ObjectMeta(name=name)))
            core.create_namespaced_service_account(
                name, k8s.V1ServiceAccount(metadata=k8s.V1ObjectMeta(name="default"))
            )

    def delete_namespace(self, name: str) -> list[str]:
        """Delete a namespace as the namespace controller would: mark it deleted (no
        new objects), delete every namespaced collection in it, then finalize it so
        it is gone. Returns what could not be deleted (objects held by finalizers
        stay, invisible once the namespace is gone, like in a real cluster)."""
        leftovers: list[str] = []
        with self.client() as api:
            core = k8s.CoreV1Api(api)
            try:
                core.delete_namespace(name)
            except k8s.ApiException as err:
                if err.status == 404:
                    return leftovers
                raise
            for path in self._namespaced_collections(api, name):
                try:
                    _call(api, "DELETE", path)
                except k8s.ApiException as err:
                    if err.status not in (404, 405):
                        leftovers.append(f"{path}: {err.status} {err.reason}")
            try:
                namespace = core.read_namespace(name)
                namespace.spec = k8s.V1NamespaceSpec(finalizers=[])
                core.replace_namespace_finalize(name, namespace)
            except k8s.ApiException as err:
                if err.status != 404:
                    raise
        return leftovers

    @staticmethod
    def _namespaced_collections(api: k8s.ApiClient, namespace: str) -> list[str]:
        """URL paths of every namespaced resource that supports deletecollection."""
        group_versions = ["/api/v1"]
        for group in _call(api, "GET", "/apis")["groups"]:
            group_versions.append(f"/apis/{group['preferredVersion']['groupVersion']}")
        paths = []
        for group_version in group_versions:
            try:
                resources = _call(api, "GET", group_version)["resources"]
            except k8s.ApiException as err:
                # A CRD being deleted, or an aggregated API that is down.
                if err.status in (404, 503):
                    continue
                raise
            for resource in resources:
                if (
                    resource["namespaced"]
                    and "/" not in resource["name"]
                    and "deletecollection" in resource.get("verbs", [])
                ):
                    paths.append(
                        f"{group_version}/namespaces/{namespace}/{resource['name']}"
                    )
        return paths

    # -- internals --

    def _write_pki(self) -> None:
        assert self.workdir is not None
        self._pki = pki = _make_pki(self.address)
        files = {
            "ca.crt": pki.ca_cert,
            "apiserver.crt": pki.serving_cert,
            "apiserver.key": pki.serving_key,
            "admin.crt": pki.admin_cert,
            "admin.key": pki.admin_key,
            "sa.key": pki.sa_key,
            "sa.pub": pki.sa_pub,
        }
        for name, data in files.items():
            path = self.workdir / name
            path.write_bytes(data)
            path.chmod(0o600)
        self.kubeconfig = self.workdir / "kubeconfig"

    def _spawn(self, name: str, args: list[str]) -> subprocess.Popen[bytes]:
        assert self.workdir is not None
        proc = spawn_logged(self.bin_dir / name, args, self.workdir, self._logs, name)
        self._procs[name] = proc
        return proc

    def _wait(self, name: str, check: Any, deadline: float) -> None:
        """Poll ``check()`` until true; fail fast if the process died."""
        proc = self._procs[name]
        last_error = "no answer yet"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ControlPlaneError(
                    f"{name} exited with {proc.returncode} during start-up:\n"
                    f"{self.log_tail(30)}"
                )
            try:
                if check():
                    return
            except (OSError, urllib.error.URLError, ValueError) as err:
                last_error = str(err)
            time.sleep(0.2)
        raise ControlPlaneError(
            f"{name} not ready after {self.startup_timeout:.0f} s ({last_error}):\n"
            f"{self.log_tail(30)}"
        )

    def _start_etcd(self) -> None:
        assert self.workdir is not None
        client_port, peer_port = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client_port}"
        peer_url = f"http://127.0.0.1:{peer_port}"
        self._spawn(
            "etcd",
            [
                "--name=citerun-test",
                f"--data-dir={self.workdir / 'etcd-data'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=citerun-test={peer_url}",
                "--initial-cluster-state=new",
                # Test data: durability across a power cut is not worth the fsyncs.
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )

        def healthy() -> bool:
            with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2) as resp:
                return bool(json.loads(resp.read()).get("health") == "true")

        self._wait("etcd", healthy, time.monotonic() + self.startup_timeout)

    def _start_apiserver(self) -> None:
        assert self.workdir is not None
        port = self.port or free_port()
        self.server = f"https://{self.address}:{port}"
        w = self.workdir
        loopback = ipaddress.ip_address(self.address).is_loopback
        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers={self.etcd_url}",
                f"--bind-address={self.address}",
                f"--advertise-address={self.address}",
                # The lease reconciler refuses a loopback address; nothing on loopback
                # needs the endpoints of the in-cluster `kubernetes` Service.
                *(["--endpoint-reconciler-type=none"] if loopback else []),
                f"--secure-port={port}",
                f"--cert-dir={w / 'apiserver-certs'}",
                f"--tls-cert-file={w / 'apiserver.crt'}",
                f"--tls-private-key-file={w / 'apiserver.key'}",
                f"--client-ca-file={w / 'ca.crt'}",
                "--authorization-mode=RBAC",
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                f"--service-account-issuer={SERVICE_ACCOUNT_ISSUER}",
                f"--service-account-key-file={w / 'sa.pub'}",
                f"--service-account-signing-key-file={w / 'sa.key'}",
                "--allow-privileged=true",
                "--profiling=false",
                "--v=1",
                *self.extra_apiserver_args,
            ],
        )
        context = ssl.create_default_context(cafile=str(w / "ca.crt"))
        context.load_cert_chain(str(w / "admin.crt"), str(w / "admin.key"))

        def ready() -> bool:
            try:
                with urllib.request.urlopen(
                    f"{self.server}/readyz", timeout=5, context=context
                ) as resp:
                    return bool(resp.status == 200)
            except urllib.error.HTTPError:
                return False  # 500 while post-start hooks (RBAC bootstrap...) run

        self._wait("kube-apiserver", ready, time.monotonic() + self.startup_timeout)

    def _write_kubeconfig(self, path: pathlib.Path, *, token: str | None = None) -> None:
        assert self._pki is not None
        def b64(data: bytes) -> str:
            return base64.b64encode(data).decode()

        if token is None:
            user_name = ADMIN_USER
            user: dict[str, str] = {
                "client-certificate-data": b64(self._pki.admin_cert),
                "client-key-data": b64(self._pki.admin_key),
            }
        else:
            user_name, user = "token", {"token": token}
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "citerun-test",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": b64(self._pki.ca_cert),
                    },
                }
            ],
            "users": [{"name": user_name, "user": user}],
            "contexts": [
                {
                    "name": "citerun-test",
                    "context": {"cluster": "citerun-test", "user": user_name},
                }
            ],
            "current-context": "citerun-test",
        }
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        path.chmod(0o600)

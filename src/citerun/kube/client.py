"""The Kubernetes API calls citerun makes outside kopf's own handler patches: the operator's,
the web's cluster backend's and the CLI client's.

The official client is synchronous; every call here runs in a thread. Status writes are
conditional on the object's resourceVersion, so two operator replicas (a rollout) or a
kopf handler patch racing a background sync never overwrite each other blindly: the
loser re-reads and tries again.
"""

from __future__ import annotations

import asyncio
import base64
import datetime
import logging
import socket
import typing
from typing import Any

import kubernetes
from kubernetes.client.exceptions import ApiException

from citerun.core import errors, runspec
from citerun.core import runspec as specs

logger = logging.getLogger(__name__)


class KubeError(errors.CiterunError):
    """A Kubernetes API call failed."""


_api_client: kubernetes.client.ApiClient | None = None


def api_client() -> kubernetes.client.ApiClient:
    """One API client per process: in-cluster config, else the kubeconfig."""
    global _api_client
    if _api_client is None:
        configuration = kubernetes.client.Configuration()
        try:
            kubernetes.config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration)
        except kubernetes.config.ConfigException:
            kubernetes.config.load_kube_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration)
        _api_client = kubernetes.client.ApiClient(configuration)
    return _api_client


def custom() -> kubernetes.client.CustomObjectsApi:
    return kubernetes.client.CustomObjectsApi(api_client())


def core() -> kubernetes.client.CoreV1Api:
    return kubernetes.client.CoreV1Api(api_client())


def apps() -> kubernetes.client.AppsV1Api:
    return kubernetes.client.AppsV1Api(api_client())


def coordination() -> kubernetes.client.CoordinationV1Api:
    return kubernetes.client.CoordinationV1Api(api_client())


class Unreadable(KubeError):
    """A Secret/ConfigMap key could not be read for a run. One message whatever the cause
    (no such object, no such key, forbidden), so a run's status and events never tell
    whether a Secret or key exists."""

    def __init__(self, kind: str, name: str, key: str) -> None:
        label = "Secret" if kind == "secret" else "ConfigMap"
        super().__init__(f"{label} {name!r} key {key!r} cannot be read for this run")


async def read_key_bytes(namespace: str, kind: str, name: str, key: str) -> bytes:
    """The bytes under ``key`` of a ConfigMap (binaryData or data) or Secret; raises
    :class:`Unreadable` (the cause only in the operator's log)."""
    def read() -> bytes | None:
        if kind == "secret":
            obj = core().read_namespaced_secret(name, namespace)
            value = (obj.data or {}).get(key)
            return None if value is None else base64.b64decode(value)
        cm = core().read_namespaced_config_map(name, namespace)
        if cm.binary_data and key in cm.binary_data:
            return base64.b64decode(cm.binary_data[key])
        if cm.data and key in cm.data:
            return str(cm.data[key]).encode()
        return None
    try:
        data = await asyncio.to_thread(read)
    except ApiException as err:
        logger.info("reading %s %s/%s for a run: %s", kind, namespace, name, err.status)
        if err.status is not None and err.status >= 500:
            raise KubeError("the API server could not be asked; trying again") from err
        raise Unreadable(kind, name, key) from err
    if data is None:
        raise Unreadable(kind, name, key)
    return data


async def get_run(namespace: str, name: str, *,
                  timeout_s: float | None = None) -> dict[str, Any] | None:
    """The CitationRun, or None when there is none; ``timeout_s`` bounds the call."""
    def get() -> dict[str, Any] | None:
        try:
            obj = custom().get_namespaced_custom_object(
                specs.GROUP, specs.VERSION, namespace, specs.PLURAL, name,
                _request_timeout=timeout_s)
            return typing.cast(dict[str, Any], obj)
        except ApiException as err:
            if err.status == 404:
                return None
            raise
    return await asyncio.to_thread(get)


async def create_run(namespace: str, body: dict[str, Any], *,
                     timeout_s: float | None = None) -> dict[str, Any]:
    """Create a CitationRun; the object as the API server stored it (its uid)."""
    def create() -> dict[str, Any]:
        return typing.cast(dict[str, Any], custom().create_namespaced_custom_object(
            specs.GROUP, specs.VERSION, namespace, specs.PLURAL, body,
            _request_timeout=timeout_s))
    return await asyncio.to_thread(create)


async def delete_run(namespace: str, name: str, *, timeout_s: float | None = None) -> None:
    """Delete a CitationRun (its finalizer runs first); one already gone is no error."""
    def delete() -> None:
        try:
            custom().delete_namespaced_custom_object(
                specs.GROUP, specs.VERSION, namespace, specs.PLURAL, name,
                _request_timeout=timeout_s)
        except ApiException as err:
            if err.status != 404:
                raise
    await asyncio.to_thread(delete)


async def patch_status(namespace: str, name: str, status: dict[str, Any], *,
                       resource_version: str | None) -> dict[str, Any] | None:
    """Merge-patch the status; with a resourceVersion, only if the object is unchanged.

    Returns the patched object, or None when the precondition failed (409) or the object
    is gone (404).
    """
    body: dict[str, Any] = {"status": status}
    if resource_version is not None:
        body["metadata"] = {"resourceVersion": resource_version}

    def patch() -> dict[str, Any] | None:
        try:
            obj = custom().patch_namespaced_custom_object_status(
                specs.GROUP, specs.VERSION, namespace, specs.PLURAL, name, body)
            return typing.cast(dict[str, Any], obj)
        except ApiException as err:
            if err.status in (404, 409):
                return None
            raise
    return await asyncio.to_thread(patch)


async def post_event(obj: dict[str, Any], *, type_: str, reason: str, message: str) -> None:
    """Post a core/v1 Event about ``obj`` (outside kopf handlers, whose ``kopf.event``
    needs the handler's context)."""
    meta = obj["metadata"]
    namespace = meta.get("namespace") or "default"
    now = datetime.datetime.now(datetime.timezone.utc)
    event = kubernetes.client.CoreV1Event(
        metadata=kubernetes.client.V1ObjectMeta(generate_name=f"{meta['name']}.",
                                                namespace=namespace),
        involved_object=kubernetes.client.V1ObjectReference(
            api_version=obj.get("apiVersion"), kind=obj.get("kind"), name=meta["name"],
            namespace=namespace, uid=meta.get("uid"),
            resource_version=meta.get("resourceVersion")),
        type=type_, reason=reason, message=message[:1024], first_timestamp=now,
        last_timestamp=now, count=1, source=kubernetes.client.V1EventSource(component="citerun"),
        reporting_component=f"{runspec.GROUP}/operator", reporting_instance=socket.gethostname())
    try:
        await asyncio.to_thread(core().create_namespaced_event, namespace, event)
    except ApiException as err:  # an event is best effort; never fail the caller for it
        logger.warning("could not post event %s on %s: %s", reason, meta["name"], err.reason)

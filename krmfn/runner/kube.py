"""The runner's view of the API server: ``HttpApi``, the HTTP implementation of ``api.Api``.

``HttpApi`` uses lightkube for what a client library is for (kubeconfig contexts, TLS, exec/token
auth) and speaks the REST API itself on lightkube's configured HTTP client, because the runner needs
requests lightkube's typed helpers do not expose: discovery for kinds known only at run time, delete
with a UID precondition, watches resumed from a resourceVersion with bookmarks, and the HTTP status of
an apply (created or not). Objects stay plain dicts so status computation stays pure and testable.

Transient failures (connection errors, 429, 5xx) are retried with capped exponential backoff; every
other failure raises ``ApiStatusError``, which the engine turns into an error naming the object.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import KubeConfig, SingleConfig

from krmfn.runner.api import ApiStatusError, NoSuchKind, Resource, WatchEvent
from krmfn.runner.errors import ClusterUnreachable

APPLY_PATCH = "application/apply-patch+yaml"  # JSON is YAML: the server accepts a JSON body here
RETRY_STATUS = frozenset({429, 500, 502, 503, 504})


def load_config(kubeconfig: str | None, context: str | None) -> SingleConfig:
    """kubectl's lookup order: --kubeconfig, $KUBECONFIG (first file), ~/.kube/config, in-cluster."""
    try:
        path = kubeconfig or next((p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p), "")
        default = Path.home() / ".kube" / "config"
        if path:
            config = KubeConfig.from_file(path)
        elif default.exists():
            config = KubeConfig.from_file(default)
        else:
            try:
                config = KubeConfig.from_service_account()
            except Exception:
                raise ClusterUnreachable(
                    "no kubeconfig: pass --kubeconfig or set KUBECONFIG (and not running in a pod)"
                ) from None
        single = config.get(context_name=context)
    except ClusterUnreachable:
        raise
    except Exception as err:  # lightkube raises several kinds for unreadable or incomplete configs
        raise ClusterUnreachable(f"cannot load the kubeconfig: {err}") from None
    if single is None:
        raise ClusterUnreachable("the kubeconfig has no current context; pass --context")
    return single


class HttpApi:
    """``Api`` over HTTP. ``sleep`` is injectable so retry tests need not wait."""

    def __init__(
        self,
        config: SingleConfig,
        *,
        timeout: float = 15.0,
        retry_budget: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        params = client_adapter.ConnectionParams(timeout=httpx2.Timeout(timeout), trust_env=False)
        self._http = client_adapter.Client(config, params)
        self._server = config.cluster.server
        self.default_namespace = config.namespace
        self._retry_budget = retry_budget
        self._sleep = sleep
        self._discovery: dict[str, dict[str, Resource]] = {}
        self._lock = threading.Lock()

    def close(self) -> None:
        self._http.close()

    # --- discovery ---------------------------------------------------------------------------------------

    def resource(self, api_version: str, kind: str) -> Resource:
        with self._lock:
            cached = self._discovery.get(api_version)
        if cached is None:
            cached = self._discover(api_version)
            with self._lock:
                self._discovery[api_version] = cached
        found = cached.get(kind)
        if found is None:
            raise NoSuchKind(f"the cluster does not serve kind {kind} in {api_version}")
        return found

    def forget(self, api_version: str) -> None:
        with self._lock:
            self._discovery.pop(api_version, None)

    def resource_for_group_kind(self, group: str, kind: str) -> Resource:
        """The resource at the group's preferred version (for pruning kinds no longer rendered)."""
        if not group:
            return self.resource("v1", kind)
        try:
            body = self._json("GET", f"/apis/{group}")
        except ApiStatusError as err:
            if err.code == 404:
                raise NoSuchKind(f"the cluster no longer serves the group {group}") from None
            raise
        preferred = (body.get("preferredVersion") or {}).get("groupVersion")
        if not preferred:
            raise NoSuchKind(f"the cluster serves no version of the group {group}")
        return self.resource(str(preferred), kind)

    def _discover(self, api_version: str) -> dict[str, Resource]:
        group, _, version = api_version.rpartition("/")
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        try:
            body = self._json("GET", path)
        except ApiStatusError as err:
            if err.code == 404:
                raise NoSuchKind(
                    f"the cluster does not serve {api_version} (is its CRD installed?)"
                ) from None
            raise
        found = {}
        for entry in body.get("resources") or []:
            if "/" in entry.get("name", ""):
                continue  # subresources such as deployments/scale
            found[entry["kind"]] = Resource(
                group, version, entry["kind"], entry["name"], bool(entry["namespaced"])
            )
        return found

    # --- requests ----------------------------------------------------------------------------------------

    def apply(
        self, res: Resource, obj: dict[str, Any], *, field_manager: str, force: bool, dry_run: bool
    ) -> tuple[dict[str, Any], bool]:
        meta = obj["metadata"]
        params = {"fieldManager": field_manager}
        if force:
            params["force"] = "true"
        if dry_run:
            params["dryRun"] = "All"
        response = self._send(
            "PATCH", res.path(meta.get("namespace", ""), meta["name"]), params=params,
            content=json.dumps(obj), headers={"Content-Type": APPLY_PATCH},
        )  # fmt: skip
        return _decode(response), response.status_code == 201

    def create(self, res: Resource, obj: dict[str, Any], *, field_manager: str) -> dict[str, Any]:
        return self._write("POST", res.path(obj["metadata"].get("namespace", "")), obj, field_manager)

    def replace(self, res: Resource, obj: dict[str, Any], *, field_manager: str) -> dict[str, Any]:
        meta = obj["metadata"]
        return self._write("PUT", res.path(meta.get("namespace", ""), meta["name"]), obj, field_manager)

    def get(self, res: Resource, name: str, namespace: str) -> dict[str, Any] | None:
        try:
            return self._json("GET", res.path(namespace, name))
        except ApiStatusError as err:
            if err.code == 404:
                return None
            raise

    def list(self, res: Resource, namespace: str, label_selector: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        params = {"labelSelector": label_selector, "limit": "500"}
        while True:
            body = self._json("GET", res.path(namespace), params=params)
            for item in body.get("items") or []:
                # List items carry no apiVersion/kind; add them so they read like single objects.
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            cont = (body.get("metadata") or {}).get("continue")
            if not cont:
                return items
            params["continue"] = cont

    def delete(self, res: Resource, name: str, namespace: str, *, uid: str = "", propagation: str) -> bool:
        options: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation,
        }
        if uid:
            options["preconditions"] = {"uid": uid}
        try:
            self._send("DELETE", res.path(namespace, name), content=json.dumps(options),
                       headers={"Content-Type": "application/json"})  # fmt: skip
        except ApiStatusError as err:
            if err.code == 404 or (err.code == 409 and uid):
                return False  # already gone, or replaced by a newer object with another UID
            raise
        return True

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        """One watch request; ends when the server closes it (the caller resumes from the last version)."""
        params = {
            "watch": "true",
            "fieldSelector": f"metadata.name={name}",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": "60",
        }
        if resource_version:
            params["resourceVersion"] = resource_version
        timeout = httpx2.Timeout(10.0, read=90.0)
        try:
            with self._http.stream("GET", res.path(namespace), params=params, timeout=timeout) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _status_error(response)
                for line in response.iter_lines():
                    if stop.is_set():
                        return
                    if line:
                        event = json.loads(line)
                        yield str(event.get("type")), event.get("object") or {}
        except httpx2.TransportError as err:
            raise ClusterUnreachable(f"watch of {name} dropped: {_describe(err)}") from None

    def logs(
        self, name: str, namespace: str, container: str, tail: int, previous: bool = False
    ) -> str | None:
        """The last lines of a container's log, or None when the node does not serve logs."""
        params = {"container": container, "tailLines": str(tail)}
        if previous:
            params["previous"] = "true"
        try:
            response = self._http.get(
                f"/api/v1/namespaces/{namespace}/pods/{name}/log", params=params, timeout=2.0
            )
        except httpx2.HTTPError:
            return None
        return response.text if response.status_code == 200 else None

    # --- transport ---------------------------------------------------------------------------------------

    def _write(self, method: str, path: str, obj: dict[str, Any], field_manager: str) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        params = {"fieldManager": field_manager}
        return _decode(self._send(method, path, params=params, content=json.dumps(obj), headers=headers))

    def _json(self, method: str, path: str, params: dict[str, str] | None = None) -> dict[str, Any]:
        return _decode(self._send(method, path, params=params))

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        content: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> httpx2.Response:
        deadline = time.monotonic() + self._retry_budget
        delay = 0.05
        while True:
            try:
                response = self._http.request(method, path, params=params, content=content, headers=headers)
            except httpx2.TransportError as err:
                if time.monotonic() + delay > deadline:
                    raise ClusterUnreachable(
                        f"cannot reach the API server at {self._server}: {_describe(err)}"
                    ) from None
            else:
                if response.status_code < 400:
                    return response
                if response.status_code not in RETRY_STATUS or time.monotonic() + delay > deadline:
                    raise _status_error(response)
                retry_after = response.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    delay = max(delay, float(retry_after))
            self._sleep(delay)
            delay = min(delay * 2, 2.0)


def _decode(response: httpx2.Response) -> dict[str, Any]:
    body = response.json()
    return body if isinstance(body, dict) else {}


def _status_error(response: httpx2.Response) -> ApiStatusError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    return ApiStatusError(
        response.status_code,
        str(body.get("reason") or response.reason_phrase),
        str(body.get("message") or ""),
    )


def _describe(err: Exception) -> str:
    text = str(err) or type(err).__name__
    return text.splitlines()[0]

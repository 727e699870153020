"""``FakeApi`` served over HTTP, so that the runner reads the cluster through its real edge: ``HttpApi``
with a stand-in transport (tests/fake_http.py) whose answers are ``FakeApi``'s objects as JSON bytes.

``FakeApi`` hands objects over as Python values, which skips the one place where krmfn bounds what it
reads from the cluster (``api.parse_json``). Over this transport every answer, list, dry run, watch line
and log is bytes that HttpApi parses, as the API server's would be; and a test can put bytes into an
answer that no Python value could be serialized from: ``raw`` maps a placeholder string, stored anywhere
in an object, to the JSON text that replaces it (``[[[...]]]`` 10,000 deep, a number of 5,000 digits) in
the answers of the verbs ``raw_in`` names (``error``: the ``Status`` of a refusal, which a ``before`` hook
of the store raises as ``ApiStatusError``).

Served: discovery (``/api/v1``, ``/apis/G``, ``/apis/G/V``), get, list (label selector ``k=v``), watch
(the objects' current state as ADDED events, then the server ends the watch, as at a timeout), apply
(``PATCH`` with ``fieldManager``, ``force``, ``dryRun``), create, replace, delete (UID precondition) and
pod logs. Errors are the API server's ``Status`` bodies. ``on_watch`` hooks change the store when a watch
starts, so that its events are newer than what the apply answered.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from fake_http import MockTransport, kubeconfig, params_of, path_of
from fake_kube import RESOURCES, FakeApi

from krmfn.net.wire import Request, Response
from krmfn.runner.cluster.api import ApiStatusError, NoSuchKind, Resource
from krmfn.runner.cluster.kube import HttpApi

JSON = {"Content-Type": "application/json"}
WIDGETS = Resource("example.com", "v1", "Widget", "widgets", True)
"""A custom resource: health by kstatus rules or CEL, any status a controller (or an attacker) writes."""
CONFIG = kubeconfig("ns")


class Store(FakeApi):
    """``FakeApi`` with a custom kind, and ``close`` (the commands close their API)."""

    def __init__(self, default_namespace: str = "ns") -> None:
        super().__init__(default_namespace)
        self.resources = [*RESOURCES, WIDGETS]
        self._by_kind = {(r.api_version, r.kind): r for r in self.resources}

    def resource_for_group_kind(self, group: str, kind: str) -> Resource:
        for res in self.resources:
            if (res.group, res.kind) == (group, kind):
                return res
        raise NoSuchKind(f"the cluster no longer serves the group {group}")

    def close(self) -> None:
        pass


class Served:
    """The HTTP face of ``store``: ``api()`` is an HttpApi that reaches it."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.raw: dict[str, bytes] = {}
        self.raw_in: set[str] = {"get", "list", "apply", "watch", "logs", "error"}
        self.on_watch: list[Callable[[], None]] = []
        """Run before each watch is answered: a controller that changes an object while it is watched."""

    def api(self) -> HttpApi:
        return HttpApi(CONFIG, retry_budget=0.5, transport=MockTransport(self.handle))

    # --- the server --------------------------------------------------------------------------------------

    def handle(self, request: Request) -> Response:
        try:
            return self._route(request)
        except ApiStatusError as err:
            body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": err.code,
                    "reason": err.reason, "message": err.message}  # fmt: skip
            return Response.of(err.code, self._bytes("error", body), JSON)

    def _route(self, request: Request) -> Response:
        parts = [unquote(p) for p in path_of(request).split("/")[1:]]
        params = params_of(request)
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, rest = parts[1], parts[2:]
            if not rest:
                versions = sorted({r.version for r in self.store.resources if r.group == group})
                if not versions:
                    raise ApiStatusError(404, "NotFound", "the server could not find the requested resource")
                preferred = {"preferredVersion": {"groupVersion": f"{group}/{versions[0]}"}}
                return Response.of(200, json.dumps(preferred).encode(), JSON)
            version, rest = rest[0], rest[1:]
        if not rest:
            return self._discovery(group, version)
        namespace = ""
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        if rest[0] == "pods" and len(rest) == 3 and rest[2] == "log":
            text = self.store.logs(rest[1], namespace, params.get("container", ""), 0, "previous" in params)
            if text is None:
                raise ApiStatusError(404, "NotFound", "the node does not serve logs")
            return Response.of(200, self._text("logs", text))
        wanted = (group, version, rest[0])
        res = next((r for r in self.store.resources if (r.group, r.version, r.plural) == wanted), None)
        if res is None:
            raise ApiStatusError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else ""
        method = request.method
        if method == "GET" and params.get("watch") == "true":
            return self._watch(res, namespace, params.get("fieldSelector", ""))
        if method == "GET" and name:
            found = self.store.get(res, name, namespace)
            if found is None:
                raise ApiStatusError(404, "NotFound", f'{res.plural} "{name}" not found')
            return self._json("get", found)
        if method == "GET":
            items = self.store.list(res, namespace, params.get("labelSelector", ""))
            return self._json("list", {"kind": f"{res.kind}List", "apiVersion": res.api_version,
                                       "metadata": {}, "items": items})  # fmt: skip
        body = json.loads(request.body) if request.body else {}
        if method == "PATCH":
            obj, created = self.store.apply(
                res, body, field_manager=params.get("fieldManager", ""), force=params.get("force") == "true",
                dry_run=params.get("dryRun") == "All",
            )  # fmt: skip
            return self._json("apply", obj, 201 if created else 200)
        if method == "POST":
            return self._json("create", self.store.create(res, body, field_manager=""), 201)
        if method == "PUT":
            return self._json("replace", self.store.replace(res, body, field_manager=""))
        if method == "DELETE":
            uid = (body.get("preconditions") or {}).get("uid", "")
            if not self.store.delete(
                res, name, namespace, uid=uid, propagation=body.get("propagationPolicy", "")
            ):
                raise ApiStatusError(404, "NotFound", f'{res.plural} "{name}" not found')
            return Response.of(200, b'{"kind": "Status", "status": "Success"}', JSON)
        raise ApiStatusError(405, "MethodNotAllowed", method)

    def _discovery(self, group: str, version: str) -> Response:
        found = [r for r in self.store.resources if (r.group, r.version) == (group, version)]
        if not found:
            raise ApiStatusError(404, "NotFound", "the server could not find the requested resource")
        entries = [{"name": r.plural, "kind": r.kind, "namespaced": r.namespaced} for r in found]
        return Response.of(200, json.dumps({"kind": "APIResourceList", "resources": entries}).encode(), JSON)

    def _watch(self, res: Resource, namespace: str, selector: str) -> Response:
        for hook in self.on_watch:
            hook()
        name = selector.removeprefix("metadata.name=") if selector.startswith("metadata.name=") else ""
        objects = [
            o for o in self.store.list(res, namespace, "") if not name or o["metadata"]["name"] == name
        ]
        lines = b"".join(self._bytes("watch", {"type": "ADDED", "object": o}) + b"\n" for o in objects)
        return Response.of(200, lines)

    def _json(self, verb: str, value: Any, code: int = 200) -> Response:
        return Response.of(code, self._bytes(verb, value), JSON)

    def _bytes(self, verb: str, value: Any) -> bytes:
        text = json.dumps(value).encode()
        if verb in self.raw_in:
            for placeholder, raw in self.raw.items():
                text = text.replace(json.dumps(placeholder).encode(), raw)
        return text

    def _text(self, verb: str, text: str) -> bytes:
        data = text.encode("utf-8", "surrogatepass")
        if verb in self.raw_in:
            for placeholder, raw in self.raw.items():
                data = data.replace(placeholder.encode(), raw)
        return data

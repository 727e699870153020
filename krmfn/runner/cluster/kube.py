"""The runner's view of the API server: ``HttpApi``, the HTTP implementation of ``api.Api``.

``HttpApi`` uses lightkube for what a client library is for (kubeconfig contexts, the TLS context,
token, token file, exec and basic auth) and speaks the REST API itself over krmfn.net (the one HTTP
stack), because the runner needs requests lightkube's typed helpers do not expose: discovery for kinds
known only at run time, delete with a UID precondition, watches resumed from a resourceVersion with
bookmarks, and the HTTP status of an apply (created or not). Objects stay plain dicts so status
computation stays pure and testable.

Every answer is read under its ceiling and within its time (krmfn/net/ceilings.py) and the command's
``Budget`` (its ``--timeout``, SIGINT and SIGTERM). Transient failures (connection errors, timeouts, 429,
5xx) are retried with capped exponential backoff; an answer over its ceiling is not (a list page is asked
for again in smaller pages); every other failure raises ``ApiStatusError``, which the engine turns into
an error naming the object.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from typing import Any

from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SingleConfig

from krmfn import __version__
from krmfn.errors import RunnerError
from krmfn.net.budget import Budget
from krmfn.net.ceilings import DISCOVERY, FOLLOW, LIST, LOGS, OBJECT, TICK, WATCH, Ceiling, seconds
from krmfn.net.errors import NetError, Stopped, TimedOut, TooLarge, Unreachable
from krmfn.net.urls import redact
from krmfn.net.wire import Transport
from krmfn.numbers import whole
from krmfn.runner.cluster.api import (
    LOG_LIMIT_BYTES,
    TRANSIENT,
    ApiStatusError,
    NoSuchKind,
    Resource,
    Unreadable,
    WatchEvent,
    group_path,
    segment,
)
from krmfn.runner.cluster.kubeconfig import GuardedAuth, auth_description, load_config, safe_reason
from krmfn.runner.cluster.logtext import served
from krmfn.runner.cluster.replies import (
    decode,
    field_value,
    request_target,
    server_date,
    status_error,
    watch_event,
)
from krmfn.runner.cluster.wire import MAX_ERROR_BODY, Reply, ServerWire, server_pool
from krmfn.runner.errors import AnswerTooLarge, ClusterUnreachable, Interrupted, KubeconfigError

__all__ = ["APPLY_PATCH", "HttpApi", "connect", "field_value", "load_config"]

APPLY_PATCH = "application/apply-patch+yaml"  # JSON is YAML: the server accepts a JSON body here
LIST_PAGE = 500


def connect(
    kubeconfig: str | None, context: str | None, *, retry_budget: float, budget: Budget | None = None
) -> HttpApi:
    """The ``HttpApi`` of the kubeconfig's context. Nothing is sent yet: credentials (a token file, an
    exec plugin) are used with the first request. ``budget``: the command's deadline and signals."""
    config = load_config(kubeconfig, context)
    try:
        return HttpApi(config, retry_budget=retry_budget, budget=budget)
    except KubeconfigError:
        raise
    except OSError as err:  # a certificate file that cannot be read
        name = f" {err.filename}" if err.filename else ""
        raise KubeconfigError(
            f"the kubeconfig's TLS files cannot be used:{name} {err.strerror or type(err).__name__}"
        ) from None
    except Exception as err:  # a bad CA or client certificate, base64 data, an unsupported auth-provider
        raise KubeconfigError(
            f"the kubeconfig's cluster or user of context {config.context_name} cannot be used: "
            f"{safe_reason(err)}"
        ) from None


class HttpApi:
    """``Api`` over HTTP (krmfn.net). The clock, ``sleep`` and the transport are injectable, so retry
    tests run against a stand-in transport without waiting (tests/test_runner_http.py); ``budget`` is the
    command's deadline and signals, which every request honours (krmfn/net/budget.py)."""

    def __init__(
        self,
        config: SingleConfig,
        *,
        retry_budget: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        transport: Transport | None = None,
        budget: Budget | None = None,
    ) -> None:
        # lightkube's TLS context (the cluster's CA, client certificates) and auth for this context.
        settings = client_adapter.ConnectionParams(trust_env=False).httpx_params(config)
        auth = settings["auth"]
        if auth is not None:
            auth = GuardedAuth(auth, auth_description(config))
        # Requests name krmfn in the API server's audit log, as kubectl names itself.
        self._headers = {"Accept": "application/json", "User-Agent": f"krmfn/{__version__}"}
        self._server = redact(config.cluster.server)
        self._wire = ServerWire(
            transport if transport is not None else server_pool(config.cluster.server, settings["verify"]),
            auth,
            budget,
        )
        self._budget = budget
        self.default_namespace = config.namespace
        self._retry_budget = retry_budget
        self._sleep = sleep
        self._clock = clock
        self._discovery: dict[str, dict[str, Resource]] = {}
        self._lock = threading.Lock()
        self._date: tuple[datetime, float] | None = None
        """The last answer's ``Date`` and this clock's time at it: the API server's time (server_time)."""

    def server_time(self) -> datetime | None:
        """The API server's time now, from the ``Date`` of its last answer (second precision) plus the
        time since; None before an answer with a readable ``Date``."""
        if self._date is None:
            return None
        date, at = self._date
        return date + timedelta(seconds=max(0.0, self._clock() - at))

    def close(self) -> None:
        self._wire.close()

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
            body = self._json("GET", group_path(group), ceiling=DISCOVERY)
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
        try:
            body = self._json("GET", group_path(group, version), ceiling=DISCOVERY)
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
        reply = self._send(
            "PATCH", res.path(meta.get("namespace", ""), meta["name"]), params=params,
            content=json.dumps(obj), headers={"Content-Type": APPLY_PATCH},
        )  # fmt: skip
        return decode(reply), reply.status == 201

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
        params = {"labelSelector": label_selector, "limit": str(LIST_PAGE)}
        while True:
            try:
                body = self._json("GET", res.path(namespace), params=params, ceiling=LIST)
            except AnswerTooLarge:
                page = int(params["limit"])
                if page == 1:
                    raise
                params["limit"] = str(page // 2)  # large objects: the same page again, in smaller pages
                continue
            for item in body.get("items") or []:
                # List items carry no apiVersion/kind; add them so they read like single objects.
                item.setdefault("apiVersion", res.api_version)
                item.setdefault("kind", res.kind)
                items.append(item)
            cont = (body.get("metadata") or {}).get("continue")
            if not cont:
                return items
            params["continue"] = cont

    def delete(self, res: Resource, name: str, namespace: str, *, uid: str, propagation: str) -> bool:
        if not uid:
            raise ValueError("a delete needs the UID of the object it means")
        options: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "DeleteOptions",
            "propagationPolicy": propagation,
            "preconditions": {"uid": uid},
        }
        try:
            self._send("DELETE", res.path(namespace, name), content=json.dumps(options),
                       headers={"Content-Type": "application/json"})  # fmt: skip
        except ApiStatusError as err:
            if err.code in (404, 409):
                return False  # already gone, or replaced by a newer object with another UID
            raise
        return True

    def watch(
        self, res: Resource, name: str, namespace: str, resource_version: str, stop: threading.Event
    ) -> Iterator[WatchEvent]:
        """One watch request; ends when the server closes it (the caller resumes from the last version),
        or within a tick of ``stop`` being set."""
        params = {"watch": "true", "allowWatchBookmarks": "true", "timeoutSeconds": "60"}
        if name:
            params["fieldSelector"] = f"metadata.name={field_value(name)}"
        if resource_version:
            params["resourceVersion"] = resource_version
        what = name or (f"{res.plural} in {namespace}" if namespace else res.plural)
        target = request_target(res.path(namespace), params)
        try:
            with self._wire.open(
                "GET", target, None, self._headers, WATCH, cancelled=stop.is_set
            ) as response:
                if response.status >= 400:
                    body = response.read_all(MAX_ERROR_BODY)
                    raise status_error(Reply(response.status, response.reason, body))
                for line in response.lines(WATCH.max_line, WATCH.max_bytes, f"watch of {what}"):
                    if stop.is_set():
                        return
                    if line:
                        event = watch_event(line)
                        if event is None:  # a proxy's page, a cut line: resumed as a dropped watch is
                            raise ClusterUnreachable(f"watch of {what}: the answer is not a stream of events")
                        yield event
        except Unreadable as err:  # not a dropped watch: resumed, the same event would come again
            raise ApiStatusError(200, "InvalidResponse", f"watch of {what}: an event {err}") from None
        except Stopped as err:
            if stop.is_set():
                return
            raise self._stopped(err, f"watch of {what}") from None
        except NetError as err:
            raise ClusterUnreachable(f"watch of {what} dropped: {err}") from None

    def logs(
        self, name: str, namespace: str, container: str, tail: int, previous: bool = False
    ) -> str | None:
        """The last lines of a container's log, or None when the node does not serve logs."""
        # limitBytes: a container that logs one huge line must not make the error (or this run) huge; a
        # server that ignores it is read as if it had not (the first LOG_LIMIT_BYTES; krmfn/net/ceilings.py).
        params = {"container": container, "tailLines": str(tail), "limitBytes": str(LOG_LIMIT_BYTES)}
        if previous:
            params["previous"] = "true"
        target = request_target(f"/api/v1/namespaces/{segment(namespace)}/pods/{segment(name)}/log", params)
        try:
            with self._wire.open("GET", target, None, self._headers, LOGS) as response:
                # Every log answer is judged by logtext.served: the kubelet writes some errors into the
                # body of a 200, and no error may be shown as a log line.
                text = response.read_prefix(LOG_LIMIT_BYTES).decode("utf-8", "replace")
                return served(response.status, text)
        except Stopped as err:
            raise self._stopped(err, "a log request") from None
        except (NetError, RunnerError):
            return None

    def follow_logs(
        self, name: str, namespace: str, container: str, since: str, stop: threading.Event
    ) -> Iterator[str]:
        """A container's log as it is written (``follow=true``, ``timestamps=true``); see Api."""
        params = {"container": container, "follow": "true", "timestamps": "true"}
        if since:
            params["sinceTime"] = since
        target = request_target(f"/api/v1/namespaces/{segment(namespace)}/pods/{segment(name)}/log", params)
        try:
            with self._wire.open(
                "GET", target, None, self._headers, FOLLOW, cancelled=stop.is_set
            ) as response:
                if response.status != 200:
                    return
                for line in response.lines(FOLLOW.max_line, FOLLOW.max_bytes, "log stream"):
                    if stop.is_set():
                        return
                    yield line.decode("utf-8", "replace")
        except (NetError, RunnerError):
            # Stopped (the step ended, the run's deadline or a signal: the run itself says so), dropped,
            # or over its ceiling: the follower opens it again or gives up; a courtesy never fails a run.
            return

    # --- transport ---------------------------------------------------------------------------------------

    def _write(self, method: str, path: str, obj: dict[str, Any], field_manager: str) -> dict[str, Any]:
        headers = {"Content-Type": "application/json"}
        params = {"fieldManager": field_manager}
        return decode(self._send(method, path, params=params, content=json.dumps(obj), headers=headers))

    def _json(
        self, method: str, path: str, params: dict[str, str] | None = None, ceiling: Ceiling = OBJECT
    ) -> dict[str, Any]:
        return decode(self._send(method, path, params=params, ceiling=ceiling))

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        content: str | None = None,
        headers: dict[str, str] | None = None,
        ceiling: Ceiling = OBJECT,
    ) -> Reply:
        target = request_target(path, params)
        body = content.encode() if content is not None else None
        sent = {**self._headers, **headers} if headers else self._headers
        deadline = self._clock() + self._retry_budget
        delay = 0.05
        while True:
            try:
                reply = self._wire.send(method, target, body, sent, ceiling)
            except (Unreachable, TimedOut) as err:
                if self._clock() + delay > deadline:
                    raise ClusterUnreachable(
                        f"cannot reach the API server at {self._server}: {err}"
                    ) from None
            except Stopped as err:
                raise self._stopped(err, f"{method} {path}") from None
            except TooLarge as err:
                raise AnswerTooLarge(f"the API server's answer to {method} {path}: {err}") from None
            except NetError as err:  # not HTTP as the API server speaks it; a header that cannot be sent
                where = f"the API server at {self._server}"
                raise ClusterUnreachable(f"{where}, {method} {path}: {err}") from None
            else:
                if reply.status < 400:
                    self._note_date(reply.headers.get("date", ""))
                    return reply
                if reply.status not in TRANSIENT:
                    raise status_error(reply)
                retry_after = reply.headers.get("retry-after", "").strip()
                if (seconds := whole(retry_after, 2**31 - 1)) is not None:  # krmfn.numbers: not int()
                    delay = max(delay, float(seconds))
                # A Retry-After past the budget ends the retries now, rather than sleeping beyond it.
                if self._clock() + delay > deadline:
                    raise status_error(reply)
            self._pause(delay, f"{method} {path}")
            delay = min(delay * 2, 2.0)

    def _note_date(self, text: str) -> None:
        date = server_date(text)
        if date is not None:
            self._date = (date, self._clock())

    def _pause(self, seconds: float, what: str) -> None:
        """The wait before a retry, cut short (and the retries ended) by the command's budget."""
        budget = self._budget
        if budget is None:
            self._sleep(seconds)
            return
        ends = self._clock() + seconds
        while (left := ends - self._clock()) > 0:
            if budget.expired():
                raise self._stopped(budget.ended(), what)
            self._sleep(min(left, TICK))

    def _stopped(self, err: Stopped, what: str) -> RunnerError:
        """A request the budget ended (its ``on_stop`` raised first, when there is one): a signal or the
        command's ``--timeout``."""
        if err.signum is not None:
            return Interrupted(err.signum, what)
        within = f" within --timeout {seconds(self._budget.timeout)}" if self._budget is not None else ""
        return ClusterUnreachable(f"{what}: no answer from the API server at {self._server}{within}")

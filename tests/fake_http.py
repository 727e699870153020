"""A stand-in for krmfn.net's transport: answers from a handler, no network. The answer's body is read by
the same code as one from a socket (``Response.of``), under the same ceilings."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

from lightkube.config.kubeconfig import KubeConfig, SingleConfig

from krmfn.net.budget import Timer
from krmfn.net.wire import Request, Response

Answer = Response | Exception


class MockTransport:
    def __init__(self, handler: Callable[[Request], Answer]) -> None:
        self.handler = handler
        self.closed = False

    def open(self, request: Request, timer: Timer) -> Response:
        answer = self.handler(request)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self) -> None:
        self.closed = True


def json_answer(code: int, body: Any, **headers: str) -> Response:
    return Response.of(code, json.dumps(body).encode(), {"Content-Type": "application/json", **headers})


def path_of(request: Request) -> str:
    return request.target.partition("?")[0]


def params_of(request: Request) -> dict[str, str]:
    return {name: values[-1] for name, values in parse_qs(urlsplit(request.target).query).items()}


def kubeconfig(namespace: str) -> SingleConfig:
    """A kubeconfig's context for ``https://api.test:6443``, a bearer token, ``namespace`` its default."""
    return KubeConfig.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "ctx",
            "clusters": [{"name": "c", "cluster": {"server": "https://api.test:6443"}}],
            "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u", "namespace": namespace}}],
            "users": [{"name": "u", "user": {"token": "t0k3n"}}],
        }
    ).get()

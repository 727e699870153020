"""A stand-in for krmfn.net's transport: answers from a handler, no network. The answer's body is read by
the same code as one from a socket (``Response.of``), under the same ceilings."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

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

"""No error answer is ever shown as a log line (logtext.py): the kubelet writes its runtime errors into the
body of a 200 once it has committed the status, and any other status is no log at all. Generated over
every error text the kubelet v1.35 writes after its 200 and every status, through the HTTP client."""

from __future__ import annotations

import pytest
from fake_http import MockTransport
from lightkube.config.kubeconfig import KubeConfig
from lightkube.config.models import Cluster, User

from krmfn.net.wire import Request, Response
from krmfn.runner.cluster.kube import HttpApi
from krmfn.runner.cluster.logtext import served

KUBELET_200_ERRORS = (
    "unable to retrieve container logs for containerd://0f3c9a1b2c4d",
    'failed to try resolving symlinks in path "/var/log/pods/ns_p_u/main/0.log": lstat: no such file',
    'failed to open log file "/var/log/pods/ns_p_u/main/0.log": open: no such file or directory',
    'failed to tail 20 lines of log file "/var/log/pods/ns_p_u/main/0.log": EOF',
    'failed to seek 4096 in log file "/var/log/pods/ns_p_u/main/0.log": invalid argument',
)
LOGS = ("run 1: applying 0042\nrun 1: lock timeout after 30s\n", "unable to retrieve the lock\n",
        "unable to retrieve container logs for x\nbut that was a line the container wrote\n")  # fmt: skip


def api_answering(status: int, body: str) -> HttpApi:
    config = KubeConfig.from_one(cluster=Cluster(server="https://127.0.0.1:1"), user=User(token="t")).get()
    assert config is not None

    def answer(request: Request) -> Response:
        return Response.of(status, body.encode(), {"Content-Type": "text/plain"})

    return HttpApi(config, retry_budget=0, transport=MockTransport(answer))


@pytest.mark.parametrize("text", KUBELET_200_ERRORS)
@pytest.mark.parametrize("previous", [False, True])
def test_a_kubelet_error_in_a_200_answer_is_no_log(text: str, previous: bool) -> None:
    assert served(200, text) is None
    assert served(200, text + "\n") is None
    assert api_answering(200, text).logs("p", "ns", "main", 20, previous) is None


@pytest.mark.parametrize("status", [400, 403, 404, 500, 502, 503])
@pytest.mark.parametrize("body", [*LOGS, '{"kind":"Status","message":"container not found"}'])
def test_an_error_status_is_no_log_whatever_its_body(status: int, body: str) -> None:
    assert served(status, body) is None
    assert api_answering(status, body).logs("p", "ns", "main", 20) is None


@pytest.mark.parametrize("body", LOGS)
def test_a_log_that_merely_mentions_such_words_is_a_log(body: str) -> None:
    assert served(200, body) == body
    assert api_answering(200, body).logs("p", "ns", "main", 20) == body

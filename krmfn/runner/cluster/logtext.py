"""Whether a log answer is a container's log or an error the kubelet wrote where the log would be.

The kubelet commits its ``200 OK`` before it asks the container runtime for the log (a zero-byte write, so
that a follow request starts streaming at once: pkg/kubelet/kubelet_pods.go), so an error after that is
written into the body of a 200 answer instead of an error status (pkg/kubelet/server/server.go): a log
read just after a pod's containers were removed gets ``unable to retrieve container logs for
containerd://<id>`` with status 200, and that text must not be shown as the container's last log line.
Every log read goes through ``served``: an answer that is not 200, or whose whole body is one of these
kubelet errors (the texts of kuberuntime and cri-client's ReadLogs, v1.35), is no log.
"""

from __future__ import annotations

import re

KUBELET_ERRORS = re.compile(
    r"(unable to retrieve container logs for \S+"
    r"|failed to try resolving symlinks in path \".*\": .*"
    r"|failed to open log file \".*\": .*"
    r"|failed to tail \d+ lines of log file \".*\": .*"
    r"|failed to seek \d+ in log file \".*\": .*)"
)


def served(status: int, body: str) -> str | None:
    """``body`` if it is a log: None for an error status or a kubelet error in a 200 answer."""
    if status != 200:
        return None
    text = body.strip()
    if "\n" not in text and KUBELET_ERRORS.fullmatch(text):
        return None
    return body

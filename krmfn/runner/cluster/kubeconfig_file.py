"""Which kubeconfig a command reads, and its context's namespace read without lightkube.

kubectl's lookup order, in one place: ``--kubeconfig``, the first file of ``$KUBECONFIG``,
``~/.kube/config``, else the pod's service account. kubeconfig.py loads the file found here with
lightkube when a command connects; ``krmfn plan`` never connects, so it reads only the namespace here.
"""

from __future__ import annotations

import os
from pathlib import Path

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def kubeconfig_path(kubeconfig: str | None) -> str:
    """``--kubeconfig``, else the first file of ``$KUBECONFIG``; "" for neither (then ~/.kube/config, or
    in-cluster when that does not exist)."""
    return kubeconfig or next((p for p in os.environ.get("KUBECONFIG", "").split(os.pathsep) if p), "")


def default_kubeconfig() -> Path:
    return Path.home() / ".kube" / "config"


def context_namespace(kubeconfig: str | None, context: str | None) -> str:
    """The context's namespace when a kubeconfig is readable, else "default" (never an error: a plan
    needs no cluster); without a kubeconfig file, the service account's namespace."""
    from krmfn.errors import InputError
    from krmfn.yaml.io import load_all_fast

    path = kubeconfig_path(kubeconfig)
    file = Path(path) if path else default_kubeconfig()
    try:
        config = next(iter(load_all_fast(file.read_text())), None)
    except FileNotFoundError:
        try:
            return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or "default"
        except OSError:
            return "default"
    except (OSError, UnicodeDecodeError, InputError):
        return "default"
    if not isinstance(config, dict):
        return "default"
    name = context or config.get("current-context")
    for entry in config.get("contexts") or []:
        if isinstance(entry, dict) and entry.get("name") == name:
            namespace = (entry.get("context") or {}).get("namespace")
            return str(namespace) if namespace else "default"
    return "default"

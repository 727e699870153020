"""The kubeconfig, read as kubectl finds it, and its credentials guarded: no error quotes a credential.

lightkube parses the kubeconfig and builds its TLS context and auth flows (token, token file, exec
credential plugin, basic auth); this module finds the file, reports what is wrong with it by file,
position and field path only, and wraps the auth flow so that a failing plugin is one
``KubeconfigError`` line naming the plugin and its exit code, never its output.
"""

from __future__ import annotations

import re
from collections.abc import Generator
from pathlib import Path
from typing import Any

from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.core.exceptions import ConfigError as LightkubeConfigError

from krmfn.errors import InputError
from krmfn.runner.cluster.kubeconfig_file import default_kubeconfig, kubeconfig_path
from krmfn.runner.cluster.wire import first_line
from krmfn.runner.errors import KubeconfigError
from krmfn.yaml.io import load_all_fast

_POSITION = re.compile(r"line (\d+), column (\d+)")
_FIELD = re.compile(r"at `(\$[\w.\[\]-]{0,256})`")  # bounded: searched in a message
_EXEC_EXIT = re.compile(r"Exec \S+ returned (-?\d+)")


def load_config(kubeconfig: str | None, context: str | None) -> SingleConfig:
    """kubectl's lookup order: --kubeconfig, $KUBECONFIG (first file), ~/.kube/config, in-cluster.

    A kubeconfig holds credentials, so no error quotes its text: a YAML error gives its position, a
    wrong field its path in the file."""
    path = kubeconfig_path(kubeconfig)
    default = default_kubeconfig()
    if not path and not default.exists():
        try:
            config = KubeConfig.from_service_account()
        except Exception:
            raise KubeconfigError(
                "no kubeconfig: pass --kubeconfig or set KUBECONFIG (and not running in a pod)"
            ) from None
    else:
        config = _read_kubeconfig(Path(path) if path else default)
    try:
        single = config.get(context_name=context)
    except LightkubeConfigError as err:  # "Context 'NAME' not found", "No current context set ..."
        raise KubeconfigError(f"the kubeconfig cannot be used: {first_line(err)}") from None
    except KeyError:
        raise KubeconfigError(
            f"the kubeconfig's context {context or config.current_context} names a cluster or user "
            "that the kubeconfig does not define"
        ) from None
    if single is None:
        raise KubeconfigError("the kubeconfig has no current context; pass --context")
    return single


def _read_kubeconfig(file: Path) -> KubeConfig:
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise KubeconfigError(f"kubeconfig {file} not found") from None
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise KubeconfigError(f"cannot read the kubeconfig {file}: {reason}") from None
    except UnicodeDecodeError:
        raise KubeconfigError(f"the kubeconfig {file} is not UTF-8 text") from None
    try:
        data = next(iter(load_all_fast(text)), None)
    except InputError as err:
        where = _POSITION.search(str(err))
        at = f" (at line {where[1]}, column {where[2]})" if where else ""
        raise KubeconfigError(f"the kubeconfig {file} is not valid YAML{at}") from None
    if not isinstance(data, dict):
        raise KubeconfigError(f"the kubeconfig {file} is not a mapping")
    try:
        return KubeConfig.from_dict(data, fname=file)
    except KeyError as err:
        raise KubeconfigError(f"the kubeconfig {file} has an entry without {err}") from None
    except Exception as err:  # lightkube's field conversion; its message may quote the value: not shown
        where = _FIELD.search(str(err))
        at = f" at {where[1]}" if where else ""
        raise KubeconfigError(f"the kubeconfig {file} has a list or field of the wrong type{at}") from None


class GuardedAuth:
    """The kubeconfig's auth (a token, a token file, an exec credential plugin) with its failures turned
    into one ``KubeconfigError`` line: lightkube raises them from inside the flow, some as plain
    exceptions (a traceback) and some quoting the plugin's stderr, which may hold credentials."""

    def __init__(self, inner: Any, what: str) -> None:
        self._inner = inner
        self._what = what

    def sync_auth_flow(self, request: Any) -> Generator[Any, Any, None]:
        flow = self._inner.sync_auth_flow(request)
        try:
            sent = next(flow)
            while True:
                response = yield sent
                sent = flow.send(response)
        except StopIteration:
            return
        except Exception as err:
            raise KubeconfigError(f"{self._what}: {safe_reason(err)}") from None


def auth_description(config: SingleConfig) -> str:
    user = config.user
    if user is not None and user.exec is not None:
        return (
            f"the exec credential plugin {Path(user.exec.command).name} of context {config.context_name} "
            "failed (run it yourself to see its output; krmfn does not print it, as it may hold credentials)"
        )
    return f"the credentials of context {config.context_name} cannot be used"


def safe_reason(err: Exception) -> str:
    """What went wrong, without the text of the error where that text may quote credentials (a plugin's
    stderr or stdout, a kubeconfig value)."""
    if isinstance(err, LightkubeConfigError):
        text = str(err)
        exited = _EXEC_EXIT.match(text)
        if exited:
            return f"exit code {exited[1]}"
        if text.startswith(("Token file ", "auth exec api version ", "auth-provider not supported")):
            return first_line(err)
        return "configuration error"
    if isinstance(err, OSError):
        return f"{err.strerror or type(err).__name__}" + (f": {err.filename}" if err.filename else "")
    if isinstance(err, ValueError | KeyError | TypeError):
        return "its output is not an ExecCredential with status.token"
    return type(err).__name__

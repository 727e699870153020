"""set-steps: put every resource in a named, ordered step, as Flux Operator's ResourceSet ``.spec.steps``.

Writes ``krmfn.dev/step``, ``krmfn.dev/step-index``, ``krmfn.dev/step-timeout`` (and ``krmfn.dev/wait`` on
the final step) for the runner; optionally ``config.kubernetes.io/depends-on`` for kpt live apply and
``argocd.argoproj.io/sync-wave`` for Argo CD, so one order drives all three.
"""

from __future__ import annotations

from typing import NoReturn

from krmfn import Function
from krmfn.functions.set_steps.config import SetStepsConfig, StepConfig
from krmfn.functions.set_steps.transform import set_steps
from krmfn.k8s.annotations import APP

__all__ = ["APP", "FUNCTION", "SetStepsConfig", "StepConfig", "main"]


FUNCTION = Function(
    name="set-steps",
    kind="SetSteps",
    config=SetStepsConfig,
    transform=set_steps,
    summary="assign resources to ordered steps (Flux Operator ResourceSet steps) as annotations",
    example="""
apiVersion: fn.krmfn.dev/v1alpha1
kind: SetSteps
metadata: {name: staged}
app: shop
wait: true
defaultStep: deploy
steps:
  - name: pre-deploy
    timeout: 5m
    selectors: [{kind: Job, name: db-migration}]
  - name: deploy
    timeout: 10m
  - name: post-deploy
    timeout: 5m
    selectors: [{kind: Job, name: cache-warmup}]
emit: [depends-on]
""",
)


def main() -> NoReturn:
    """The console script ``krmfn-<name>``."""
    FUNCTION.console()

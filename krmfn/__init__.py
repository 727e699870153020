"""krmfn: KRM functions and a step-by-step apply runner for Jobs that run in order with deployments.

Public surface: ``Function`` (write a function), ``ResourceList``, ``Results``, ``Selector``/``select``
and the error hierarchy in ``krmfn.errors``. Everything else is internal.
"""

from krmfn.function import Function
from krmfn.resourcelist import ResourceList
from krmfn.results import Results
from krmfn.selector import Selector, select

__all__ = ["Function", "ResourceList", "Results", "Selector", "select"]
__version__ = "0.1.0"

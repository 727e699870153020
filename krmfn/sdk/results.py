"""Function results, as the KRM Functions Specification defines them."""

from __future__ import annotations

from typing import Any, Literal

from krmfn.k8s.kobj import Obj, file_of, ref_of
from krmfn.records import Record

Severity = Literal["error", "warning", "info"]
_SECRET_FIELDS = ("data", "stringData")


class Result(Record):
    """One result of a function run, as the KRM Functions Specification has it."""

    _fields = ("message", "severity", "obj", "field", "current_value", "proposed_value", "tags")

    def __init__(  # noqa: PLR0917  # the spec's fields, in its order
        self,
        message: str,
        severity: Severity = "error",
        obj: Obj | None = None,
        field: str = "",
        current_value: Any = None,
        proposed_value: Any = None,
        tags: dict[str, str] | None = None,
    ) -> None:
        self.message = message
        self.severity = severity
        self.obj = obj
        self.field = field
        self.current_value = current_value
        self.proposed_value = proposed_value
        self.tags: dict[str, str] = {} if tags is None else tags

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"message": self.message, "severity": self.severity}
        if self.obj is not None:
            out["resourceRef"] = ref_of(self.obj).as_result()
            where = file_of(self.obj)
            if where:
                out["file"] = where
        if self.field:
            entry: dict[str, Any] = {"path": self.field}
            if not self._hides_values():
                if self.current_value is not None:
                    entry["currentValue"] = self.current_value
                if self.proposed_value is not None:
                    entry["proposedValue"] = self.proposed_value
            out["field"] = entry
        if self.tags:
            out["tags"] = dict(self.tags)
        return out

    def _hides_values(self) -> bool:
        # A safety net under every function: Secret payloads never reach results.
        return (
            self.obj is not None
            and self.obj.get("kind") == "Secret"
            and self.field.startswith(_SECRET_FIELDS)
        )

    def describe(self) -> str:
        """One line for stderr."""
        where = str(ref_of(self.obj)) if self.obj is not None else ""
        if self.field:
            where = f"{where}: {self.field}" if where else self.field
        return f"{self.severity}: {where}: {self.message}" if where else f"{self.severity}: {self.message}"


class Results(list[Result]):
    """The results of one function run; ``error``/``warning``/``info`` add one and return it."""

    def add(
        self, message: str, severity: Severity, obj: Obj | None = None, field: str = "", **kw: Any
    ) -> Result:
        result = Result(message, severity, obj, field, **kw)
        self.append(result)
        return result

    def error(self, message: str, obj: Obj | None = None, field: str = "", **kw: Any) -> Result:
        return self.add(message, "error", obj, field, **kw)

    def warning(self, message: str, obj: Obj | None = None, field: str = "", **kw: Any) -> Result:
        return self.add(message, "warning", obj, field, **kw)

    def info(self, message: str, obj: Obj | None = None, field: str = "", **kw: Any) -> Result:
        return self.add(message, "info", obj, field, **kw)

    @property
    def has_errors(self) -> bool:
        return any(r.severity == "error" for r in self)

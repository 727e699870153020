"""The render-inputs transform: collect the inputs, then render every string (keys too) of every
resource that is not local configuration."""

from __future__ import annotations

from typing import Any

from krmfn import ResourceList
from krmfn.functions.render_inputs import engine, values
from krmfn.functions.render_inputs.config import STRING_VALUES, RenderInputsConfig
from krmfn.k8s.kobj import Obj, is_local_config, set_scalar, walk_strings
from krmfn.limits import Limits
from krmfn.yaml.io import plain


def collect_inputs(rl: ResourceList, config: RenderInputsConfig) -> dict[str, Any] | None:
    """``inputs`` with each ``inputsFrom`` ConfigMap's data merged over it, in order; None on error."""
    merged = dict(plain(config.inputs))
    ok = True
    for index, ref in enumerate(config.inputs_from):
        where = f"functionConfig.inputsFrom[{index}]"
        found = [
            o
            for o in rl.items  # local-config ConfigMaps count: they exist only to feed functions
            if o.get("kind") == "ConfigMap"
            and o.get("apiVersion") == "v1"
            and (o.get("metadata") or {}).get("name") == ref.name
            and (not ref.namespace or (o.get("metadata") or {}).get("namespace", "") == ref.namespace)
        ]
        if len(found) != 1:
            problem = "no ConfigMap" if not found else f"{len(found)} ConfigMaps (set namespace)"
            ns = f" in namespace {ref.namespace!r}" if ref.namespace else ""
            rl.results.error(f"{problem} named {ref.name!r}{ns} in the resource list", field=where)
            ok = False
            continue
        data = found[0].get("data") or {}
        if not isinstance(data, dict):
            rl.results.error("data must be a mapping of strings", found[0], field="data")
            ok = False
            continue
        wrong = [key for key, value in data.items() if not isinstance(value, str)]
        for key in wrong:  # as the API server refuses them, and `| int` in templates expects them
            rl.results.error(STRING_VALUES, found[0], field=f"data.{key}")
        if wrong:
            ok = False
            continue
        merged.update({str(k): v for k, v in plain(data).items()})
    for _, _, path in (hit for hit in walk_strings(merged) if engine.has_expression(hit[0][hit[1]])):
        # The rendered value would hold the expression, and the next render would evaluate it.
        rl.results.error(
            "an input value holds a << >> expression; inputs are values, not templates",
            field=f"inputs.{path}",
        )
        ok = False
    return merged if ok else None


def render_inputs(rl: ResourceList, config: RenderInputsConfig) -> None:
    inputs = collect_inputs(rl, config)
    if inputs is None:
        rl.results.info("rendered 0 expression(s) in 0 resource(s)")
        return
    strings = resources = 0
    with values.budget(Limits.from_env()):  # one budget for the run (or the krmfn render around it)
        for obj in rl.items:
            if is_local_config(obj):
                continue
            renderer = _Renderer(rl, obj, inputs)
            try:
                if _is_secret(obj) and not config.render_secrets:
                    _leave_payload(rl, obj)
                    renderer.value({k: v for k, v in obj.items() if k not in SECRET_PAYLOAD}, "", obj)
                else:
                    renderer.value(obj, "")
            except _Spent:  # no partial output: what was rendered so far goes with the items
                rl.items.clear()
                return
            strings += renderer.rendered
            resources += bool(renderer.rendered)
    rl.results.info(f"rendered {strings} expression(s) in {resources} resource(s)")


class _Spent(Exception):
    """The render's budget ran out (one error result says where): no expression is rendered after."""


SECRET_PAYLOAD = ("data", "stringData")


def _is_secret(obj: Obj) -> bool:
    return obj.get("kind") == "Secret" and obj.get("apiVersion") == "v1"


def _leave_payload(rl: ResourceList, obj: Obj) -> None:
    """One warning for a Secret whose payload holds expressions left unrendered: applied as they are,
    they would be wrong values, so say so (never quoting them)."""
    found = [path for key in SECRET_PAYLOAD for path in _expression_paths(obj.get(key), key)]
    if found:
        rl.results.warning(
            f"{len(found)} << >> expression(s) in the Secret's payload left unrendered: Secret data and "
            "stringData are rendered only with renderSecrets: true",
            obj,
            field=found[0],
        )


def _expression_paths(node: Any, path: str) -> list[str]:
    if isinstance(node, str):
        return [path] if engine.has_expression(node) else []
    keys = [f"{path}.{k}" for k in node if isinstance(k, str)] if isinstance(node, dict) else []
    return [p for p in keys if engine.has_expression(p[len(path) + 1 :])] + [
        p for container, key, p in walk_strings(node, path) if engine.has_expression(container[key])
    ]


class _Renderer:
    def __init__(self, rl: ResourceList, obj: Obj, inputs: dict[str, Any]) -> None:
        self.rl, self.obj, self.inputs, self.rendered = rl, obj, inputs, 0

    def _render(self, text: str, path: str) -> tuple[bool, Any]:
        if not engine.has_expression(text):
            return False, text
        try:
            value = engine.render(text, self.inputs)
        except values.BudgetExceeded as err:  # generic: quotes nothing of the expression or inputs
            self.rl.results.error(str(err), self.obj, field=path)
            raise _Spent from None
        except values.RenderError as err:
            # In a Secret the expression is the Secret's value: report why, never what (nor a token
            # of it, such as an attribute or filter name).
            message = (
                f"cannot render the expression: {err.secret_reason} (a Secret's value is never quoted)"
                if _is_secret(self.obj)
                else str(err)
            )
            self.rl.results.error(message, self.obj, field=path)
            return False, text
        self.rendered += 1
        return True, value

    def value(self, node: Any, path: str, target: Any = None) -> None:
        """Render ``node``'s strings and keys; ``target`` is the mapping to write top-level keys into
        when ``node`` is a filtered view of it (a Secret without its payload)."""
        if target is not None:
            for key in list(node):
                self._child(target, key, key)
            return
        if isinstance(node, dict):
            for key in list(node):
                self._child(node, key, f"{path}.{key}" if path else str(key))
        elif isinstance(node, list):
            for index, child in enumerate(node):
                here = f"{path}[{index}]"
                if isinstance(child, str):
                    changed, new = self._render(child, here)
                    if changed:
                        node[index] = new
                else:
                    self.value(child, here)

    def _child(self, node: dict[Any, Any], key: Any, here: str) -> None:
        child = node[key]
        if isinstance(child, str):
            changed, new = self._render(child, here)
            if changed:
                set_scalar(node, key, new)
        else:
            self.value(child, here)
        if isinstance(key, str):
            self._key(node, key, here)

    def _key(self, mapping: dict[Any, Any], key: str, path: str) -> None:
        changed, new = self._render(key, path)
        if not changed or new == key:
            return
        new_key = values.to_text(new)
        if new_key in mapping:
            self.rl.results.error(f"renders to {new_key!r}, a key that already exists", self.obj, field=path)
            return
        keys = list(mapping)
        position = keys.index(key)
        value = mapping.pop(key)
        if hasattr(mapping, "insert"):  # ruamel's CommentedMap keeps comments and order this way
            mapping.insert(position, new_key, value)
            return
        mapping[new_key] = value
        for later in keys[position + 1 :]:
            mapping[later] = mapping.pop(later)

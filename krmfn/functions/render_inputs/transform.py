"""The render-inputs transform: collect the inputs, then render every string (keys too) of every
resource that is not local configuration."""

from __future__ import annotations

from typing import Any

from krmfn import ResourceList
from krmfn.functions.render_inputs import engine
from krmfn.functions.render_inputs.config import RenderInputsConfig
from krmfn.kobj import Obj, is_local_config, set_scalar, walk_strings
from krmfn.yamlio import plain


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
    for obj in rl.items:
        if is_local_config(obj):
            continue
        renderer = _Renderer(rl, obj, inputs)
        renderer.value(obj, "")
        strings += renderer.rendered
        resources += bool(renderer.rendered)
    rl.results.info(f"rendered {strings} expression(s) in {resources} resource(s)")


class _Renderer:
    def __init__(self, rl: ResourceList, obj: Obj, inputs: dict[str, Any]) -> None:
        self.rl, self.obj, self.inputs, self.rendered = rl, obj, inputs, 0

    def _render(self, text: str, path: str) -> tuple[bool, Any]:
        if not engine.has_expression(text):
            return False, text
        try:
            value = engine.render(text, self.inputs)
        except engine.RenderError as err:
            # In a Secret the expression is the Secret's value: report why, never what.
            message = err.reason if self.obj.get("kind") == "Secret" else str(err)
            self.rl.results.error(message, self.obj, field=path)
            return False, text
        self.rendered += 1
        return True, value

    def value(self, node: Any, path: str) -> None:
        if isinstance(node, dict):
            for key in list(node):
                here = f"{path}.{key}" if path else str(key)
                child = node[key]
                if isinstance(child, str):
                    changed, new = self._render(child, here)
                    if changed:
                        set_scalar(node, key, new)
                else:
                    self.value(child, here)
                if isinstance(key, str):
                    self._key(node, key, here)
        elif isinstance(node, list):
            for index, child in enumerate(node):
                here = f"{path}[{index}]"
                if isinstance(child, str):
                    changed, new = self._render(child, here)
                    if changed:
                        node[index] = new
                else:
                    self.value(child, here)

    def _key(self, mapping: dict[Any, Any], key: str, path: str) -> None:
        changed, new = self._render(key, path)
        if not changed or new == key:
            return
        new_key = engine.to_text(new)
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

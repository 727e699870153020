"""The transform: resolve each pod template's references inside the ResourceList and annotate it."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from krmfn import ResourceList, select
from krmfn.errors import ConfigError
from krmfn.functions.set_config_checksum.keyed import keyed, load_key
from krmfn.functions.set_config_checksum.references import KINDS, AnnotationError, annotation_refs, merge
from krmfn.k8s.configdigest import checksum
from krmfn.k8s.kobj import Obj, annotations_of, is_local_config, ref_of, remove_annotation, set_annotation
from krmfn.k8s.kustomize_name_fields import CONFIGMAP, SECRET, rewritten_fields
from krmfn.k8s.kustomize_names import Names, names_of
from krmfn.k8s.podtemplates import ConfigRef, PodTemplate, TemplatePath, pod_templates, spec_refs

if TYPE_CHECKING:
    from krmfn.functions.set_config_checksum.config import SetConfigChecksumConfig

CHECKSUM = "krmfn.dev/config-checksum"
Key = tuple[str, str, str]


def index_config(items: Iterable[Obj], local: bool = False) -> dict[Key, Obj]:
    """ConfigMaps and Secrets by (kind, namespace, name); local config is never deployed, so never found."""
    found: dict[Key, Obj] = {}
    for obj in items:
        if obj.get("kind") in KINDS and obj.get("apiVersion") == "v1" and is_local_config(obj) == local:
            ref = ref_of(obj)
            found.setdefault((ref.kind, ref.namespace, ref.name), obj)
    return found


def _metadata_first(template: dict[str, Any]) -> None:
    """Create a missing ``metadata`` before ``spec``, where people write it, rather than after it."""
    if isinstance(template.get("metadata"), dict):
        return
    template.pop("metadata", None)
    insert = getattr(template, "insert", None)  # ruamel's CommentedMap keeps comments this way
    if callable(insert):
        insert(0, "metadata", type(template)())
        return
    rest = list(template.items())
    template.clear()
    template["metadata"] = {}
    template.update(rest)


def references(obj: Obj, template: PodTemplate, namespace: str) -> list[ConfigRef]:
    refs = list(spec_refs(template, namespace))
    if template.template is not obj:
        refs += annotation_refs(annotations_of(obj), namespace, "")
    refs += annotation_refs(annotations_of(template.template), namespace, template.field(""))
    return merge(refs)


class Run:
    """One run's state: the index of config objects, the counters of the summary, the results."""

    key: bytes | None = None
    """The HMAC key of the keyed mode (see keyed.py); None for plain sha256."""

    def __init__(self, rl: ResourceList, config: SetConfigChecksumConfig) -> None:
        self.rl = rl
        self.config = config
        self.index = index_config(rl.items)
        self.local = index_config(rl.items, local=True)
        # References resolve as kustomize's name-reference step will resolve them (the same inside a
        # kustomization, where names are not final yet, and in a pipe after the build).
        self.names = Names(obj for obj in rl.items if not is_local_config(obj))
        self.extra = [TemplatePath(p.kind, p.path, p.api_version) for p in config.pod_template_paths]
        self.annotated = 0
        self.removed = 0
        self.missing = 0
        self.hashed: set[int] = set()

    def visit(self, obj: Obj) -> None:
        namespace = ref_of(obj).namespace
        for template in pod_templates(obj, self.extra):
            try:
                refs = references(obj, template, namespace)
            except AnnotationError as err:
                self.rl.results.error(str(err), obj, field=err.field)
                continue
            rewritten = rewritten_fields(obj)
            found = [self.resolve(obj, ref, ref.field in rewritten) for ref in refs]
            present = list({id(target): target for target in found if target is not None}.values())
            if present:
                _metadata_first(template.template)
                set_annotation(template.template, CHECKSUM, self.digest(present))
                self.annotated += 1
                self.hashed.update(id(target) for target in present)
            elif remove_annotation(template.template, CHECKSUM):
                # A checksum over nothing would be stale; dropping it keeps the output a function of input.
                self.removed += 1

    def resolve(self, obj: Obj, ref: ConfigRef, rewritten: bool) -> Obj | None:
        kind = CONFIGMAP if ref.kind == "ConfigMap" else SECRET
        target = self.names.resolve(obj, kind, ref.name, rewritten, ref.namespace)
        if target is not None:
            return target
        self.missing += 1
        message = f"{ref} is not in the ResourceList, so its content is not part of the checksum"
        if ref.optional:
            message += " (optional reference)"
        elif self.config.strict:
            message += " (strict: true)"
        else:
            message += " (it may exist in the cluster)"
        message += self.hint(ref)
        if ref.optional:
            self.rl.results.info(message, obj, field=ref.field)
        elif self.config.strict:
            self.rl.results.error(message, obj, field=ref.field)
        else:
            self.rl.results.warning(message, obj, field=ref.field)
        return None

    def hint(self, ref: ConfigRef) -> str:
        """Near misses: the same name in another namespace, or in local config (which is never deployed)."""
        elsewhere = sorted(
            ns or "(none)" for kind, ns, name in self.index if (kind, name) == (ref.kind, ref.name)
        )
        if elsewhere:
            return f"; a {ref.kind} of that name is in namespace(s) {', '.join(elsewhere)}"
        if ref.key in self.local:
            return f"; a {ref.kind} of that name is local config, which is not deployed"
        renamed = sorted(
            f"{ns}/{name}" if ns else name
            for (kind, ns, name), obj in self.index.items()
            if kind == ref.kind and ref.name in names_of(obj)
        )
        if renamed:
            return (
                f"; kustomize renamed it to {', '.join(renamed)}, and does not rewrite names in this field "
                "(reference it by its final name)"
            )
        return ""

    def digest(self, objects: list[Obj]) -> str:
        plain = checksum(objects)
        return plain if self.key is None else keyed(plain, self.key)

    def summary(self) -> str:
        text = (
            f"set {CHECKSUM} on {self.annotated} pod template(s) "
            f"from {len(self.hashed)} ConfigMap/Secret object(s)"
        )
        if self.missing:
            text += f"; {self.missing} reference(s) not in the ResourceList"
        if self.removed:
            text += f"; removed {self.removed} checksum(s) that no longer had a referenced object"
        return text


def set_config_checksum(rl: ResourceList, config: SetConfigChecksumConfig) -> None:
    try:
        key = load_key(config.hmac_key_env, config.hmac_key_file)
    except ConfigError as err:
        rl.results.error(err.reason, field=f"functionConfig.{err.field}")
        return
    run = Run(rl, config)
    run.key = key
    for obj in select(rl.items, config.selectors, config.exclude):
        run.visit(obj)
    rl.results.info(run.summary())

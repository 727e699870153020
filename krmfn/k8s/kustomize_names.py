"""Names as kustomize will leave them: where a name reference points once ``kustomize build`` is done.

A function listed under a kustomization's ``transformers:`` or ``validators:`` runs before kustomize
appends generator hash suffixes and before it fixes name references (its name-reference step runs
last, over the whole tree). At that point a ``namePrefix`` has already renamed ConfigMap ``app`` to
``prod-app``, but a Deployment still says ``configMapRef: {name: app}``. kustomize keeps what it needs
to repair the reference in build annotations on each object:

- ``internal.config.kubernetes.io/previousNames``, ``previousKinds``, ``previousNamespaces``: the
  object's earlier identities, oldest first, one comma-separated entry per rename;
- ``internal.config.kubernetes.io/prefixes``, ``suffixes``: the name prefixes and suffixes applied;
- ``internal.config.kubernetes.io/needsHashSuffix: enabled``: a generated ConfigMap or Secret whose
  name gets ``-<hash of its content>`` at the end of the build (``disableNameSuffixHash`` leaves it off).

This module answers, from those annotations alone, the questions functions ask:

- ``final_name(obj)``: the name the object will have in the build output;
- ``Names(items).resolve(referrer, target, name)``: the object a reference will point to, chosen the
  way kustomize's name-reference filter chooses it (earlier name and kind, same namespace, matching
  prefixes and suffixes);
- ``names_of(obj)``: every name the object has had, for selectors written against base names;
- ``name_fields(obj)`` (kustomize_name_fields.py): the fields of ``obj`` that kustomize treats as name
  references.

Outside kustomize (kpt, or a pipe after ``kustomize build``) there are no build annotations: every
name is final and a reference points at the object of that name, so the same calls give the same
answers there. That is what makes a checksum or a Job hash computed inside kustomize equal to the one
computed in a pipe after the build.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from krmfn.k8s.kobj import Obj, annotations_of, ref_of
from krmfn.k8s.kustomize_name_fields import Target, name_fields
from krmfn.records import FrozenRecord
from krmfn.yaml.io import plain

_DOMAIN = "internal.config.kubernetes.io/"
PREVIOUS_NAMES = _DOMAIN + "previousNames"
PREVIOUS_KINDS = _DOMAIN + "previousKinds"
PREVIOUS_NAMESPACES = _DOMAIN + "previousNamespaces"
PREFIXES = _DOMAIN + "prefixes"
SUFFIXES = _DOMAIN + "suffixes"
NEEDS_HASH_SUFFIX = _DOMAIN + "needsHashSuffix"
DEFAULT_NAMESPACE = "default"
_CLUSTER = "_non_namespaceable_"  # the effective namespace of cluster-scoped objects, as kustomize's

# Built-in kinds kustomize knows to be cluster-scoped (from the OpenAPI data it embeds). An object of
# any other kind is namespaced for the purpose of matching references.
CLUSTER_SCOPED_KINDS = frozenset(
    {
        "APIService",
        "CertificateSigningRequest",
        "ClusterRole",
        "ClusterRoleBinding",
        "ClusterTrustBundle",
        "ComponentStatus",
        "CSIDriver",
        "CSINode",
        "CustomResourceDefinition",
        "DeviceClass",
        "FlowSchema",
        "IngressClass",
        "MutatingAdmissionPolicy",
        "MutatingAdmissionPolicyBinding",
        "MutatingWebhookConfiguration",
        "Namespace",
        "Node",
        "PersistentVolume",
        "PodSecurityPolicy",
        "PriorityClass",
        "PriorityLevelConfiguration",
        "RuntimeClass",
        "SelfSubjectAccessReview",
        "SelfSubjectRulesReview",
        "StorageClass",
        "SubjectAccessReview",
        "TokenReview",
        "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
        "ValidatingWebhookConfiguration",
        "VolumeAttachment",
    }
)


class Id(FrozenRecord):
    """An object's kind, name and namespace, as kustomize identifies it."""

    __slots__ = _fields = ("kind", "name", "namespace")

    def __init__(self, kind: str, name: str, namespace: str) -> None:
        self.kind = kind
        self.name = name
        self.namespace = namespace


def _csv(obj: Obj, key: str) -> list[str] | None:
    value = annotations_of(obj).get(key)
    return str(value).split(",") if value is not None else None


def previous_ids(obj: Obj) -> list[Id]:
    """The identities kustomize recorded before each rename, oldest first; empty outside kustomize."""
    names = _csv(obj, PREVIOUS_NAMES)
    if names is None:
        return []
    kinds = _csv(obj, PREVIOUS_KINDS) or []
    namespaces = _csv(obj, PREVIOUS_NAMESPACES) or []
    if not len(names) == len(kinds) == len(namespaces):  # kustomize itself refuses such an object
        return []
    return [Id(k, n, ns) for n, k, ns in zip(names, kinds, namespaces, strict=True)]


KUSTOMIZE_ID = "kustomize.config.k8s.io/id"


def record_rename(obj: Obj) -> None:
    """Before a function renames ``obj`` inside a kustomize build, record its identity the way
    kustomize's own renaming transformers do, so that what kustomize does later still finds it: an
    overlay's patch targeting the old name, a reference written with it. Outside kustomize (no
    ``kustomize.config.k8s.io/id`` on the object) nothing is written: the output would carry it."""
    notes = annotations_of(obj)
    if KUSTOMIZE_ID not in notes or not isinstance(obj.get("metadata"), dict):
        return
    ref = ref_of(obj)
    current = (ref.name, ref.kind, effective_namespace(ref.kind, ref.namespace))
    for key, value in zip((PREVIOUS_NAMES, PREVIOUS_KINDS, PREVIOUS_NAMESPACES), current, strict=True):
        earlier = notes.get(key)
        notes[key] = f"{earlier},{value}" if earlier is not None else value


def needs_hash_suffix(obj: Obj) -> bool:
    return str(annotations_of(obj).get(NEEDS_HASH_SUFFIX, "")) == "enabled"


def _go_json(value: Any) -> str:
    """``json.Marshal`` of Go: sorted keys, no spaces, and ``<``, ``>``, ``&``, U+2028/9 escaped."""
    import json  # only a kustomize generator's name needs it: not on every function's start

    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    for char, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, escape)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def kustomize_hash(obj: Obj) -> str:
    """The suffix kustomize appends to a generated ConfigMap or Secret: 10 characters of a sha256 over
    its kind and content (kustomize looks the name up under a key it never finds, so the name is "")."""

    def mapping(key: str) -> Any:
        value = plain(obj.get(key))
        return value if isinstance(value, dict) else None

    data = mapping("data")
    if obj.get("kind") == "Secret":
        encoded: dict[str, Any] = {
            "kind": "Secret",
            "type": str(obj.get("type") or ""),
            "name": "",
            "data": data if data is not None else "",
        }
        if mapping("stringData") is not None:
            encoded["stringData"] = mapping("stringData")
    else:
        encoded = {"kind": "ConfigMap", "name": "", "data": data if data is not None else ""}
        if mapping("binaryData") is not None:
            encoded["binaryData"] = mapping("binaryData")
    import hashlib

    digest = hashlib.sha256(_go_json(encoded).encode("utf-8")).hexdigest()[:10]
    return digest.translate(str.maketrans("013ae", "ghkmt"))


def final_name(obj: Obj) -> str:
    """The name ``obj`` will have in the build output: its name, plus the content hash kustomize adds
    at the end of the build to a generated ConfigMap or Secret that still needs one."""
    name = ref_of(obj).name
    if needs_hash_suffix(obj) and obj.get("kind") in ("ConfigMap", "Secret"):
        return f"{name}-{kustomize_hash(obj)}"
    return name


_HASH_SUFFIX = re.compile(r"-[2456789bcdfghkmt]{10}$")
"""What kustomize's generators append: ``-`` and 10 characters of a sha256 in hex, with 0, 1, 3, a and e
written g, h, k, m and t (``kustomize_hash``)."""


def name_before_hash(obj: Obj) -> str:
    """The name of a ConfigMap or Secret without the hash a kustomize generator appended to it: after
    the build that suffix is all the stream tells of the generator (its earlier names are gone), and it
    changes with every change of the content. Any other object's name as it is."""
    name = ref_of(obj).name
    if obj.get("kind") in ("ConfigMap", "Secret") and obj.get("apiVersion") == "v1":
        return _HASH_SUFFIX.sub("", name) or name
    return name


def names_of(obj: Obj) -> list[str]:
    """Every name ``obj`` has had or will have: earlier names, the current one, the final one, and the
    name before a generator's hash (the same inside a build and in a pipe after it)."""
    found = [i.name for i in previous_ids(obj)] + [ref_of(obj).name, final_name(obj), name_before_hash(obj)]
    return list(dict.fromkeys(n for n in found if n))


def is_cluster_scoped(kind: str) -> bool:
    return kind in CLUSTER_SCOPED_KINDS


def effective_namespace(kind: str, namespace: str) -> str:
    if is_cluster_scoped(kind):
        return _CLUSTER
    return namespace or DEFAULT_NAMESPACE


def _namespace_of(obj: Obj) -> str:
    ref = ref_of(obj)
    return effective_namespace(ref.kind, ref.namespace)


def _tail_equal(a: list[str], b: list[str]) -> bool:
    """kustomize's SameEndingSubSlice: the shorter list is the end of the longer; two empties match."""
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not short:
        return not long
    return long[len(long) - len(short) :] == short


def _affixes(obj: Obj) -> tuple[list[str], list[str]]:
    return _csv(obj, PREFIXES) or [], _csv(obj, SUFFIXES) or []


def _affixes_equal(a: Obj, b: Obj, allow_empty: bool) -> bool:
    (pa, sa), (pb, sb) = _affixes(a), _affixes(b)
    prefixes = (allow_empty and (not pa or not pb)) or _tail_equal(pa, pb)
    suffixes = (allow_empty and (not sa or not sb)) or _tail_equal(sa, sb)
    return prefixes and suffixes


class Names:
    """The objects of one ResourceList, indexed to resolve references the way kustomize will."""

    def __init__(self, items: Iterable[Obj]) -> None:
        self._items = [o for o in items if isinstance(o, dict) and isinstance(o.get("kind"), str)]
        # Objects kustomize will rename by reference: renamed before, or about to get a hash suffix
        # (the hash transformer records the pre-hash name as a previous one).
        self._renamed: dict[str, list[tuple[Obj, list[Id]]]] = {}
        """By every earlier name: a reference looks at the objects that had its name, not at all of them
        (every object of an overlay with a namePrefix is renamed)."""
        self._final: dict[tuple[str, str, str], list[Obj]] = {}
        for obj in self._items:
            ref = ref_of(obj)
            earlier = previous_ids(obj)
            if needs_hash_suffix(obj):
                earlier = [*earlier, Id(ref.kind, ref.name, ref.namespace or DEFAULT_NAMESPACE)]
            if earlier:
                for name in dict.fromkeys(i.name for i in earlier):
                    self._renamed.setdefault(name, []).append((obj, earlier))
            key = (ref.kind, _namespace_of(obj), final_name(obj))
            self._final.setdefault(key, []).append(obj)

    def resolve(
        self, referrer: Obj, target: Target, name: str, rewritten: bool = True, namespace: str | None = None
    ) -> Obj | None:
        """The object ``name`` (written in ``referrer``) will point to once kustomize is done, or None.

        ``rewritten`` says whether the field is one kustomize rewrites (see ``name_fields``); any other
        field keeps the name as written, so it points at the object that ends up with that name, in
        ``namespace`` when the reference names one (default: the referrer's).
        """
        if rewritten:
            found = self._referral(referrer, target, name)
            if found is not None:
                return found
        where = ref_of(referrer).namespace if namespace is None else namespace
        namespace = effective_namespace(target.kind, where)
        for obj in self._final.get((target.kind, namespace, name), []):
            if target.selects(str(obj.get("apiVersion", "")), target.kind):
                return obj
        return None

    def _referral(self, referrer: Obj, target: Target, name: str) -> Obj | None:
        """kustomize's selectReferral over the objects it may rename."""
        here = _namespace_of(referrer)
        # Candidates: in the referrer's namespace or cluster-scoped (any, for a cluster-scoped referrer),
        # with an earlier identity of that name and one of the target's kind.
        candidates = [
            obj
            for obj, earlier in self._renamed.get(name, ())
            if (here == _CLUSTER or _namespace_of(obj) in (_CLUSTER, here))
            and any(target.selects(str(obj.get("apiVersion", "")), i.kind) for i in earlier)
        ]
        if len(candidates) == 1:
            return candidates[0]
        candidates = [c for c in candidates if _affixes_equal(c, referrer, allow_empty=True)]
        if len(candidates) > 1:
            candidates = [c for c in candidates if _affixes_equal(c, referrer, allow_empty=False)]
        if not candidates:
            return None
        if len({final_name(c) for c in candidates}) == 1:
            return candidates[0]
        return None  # kustomize stops with "found multiple possible referrals"


def as_built(obj: Obj, names: Names) -> dict[str, Any]:
    """A plain copy of ``obj`` with every name reference kustomize will rewrite already rewritten (a
    generated ConfigMap's hash suffix, a ServiceAccount's namePrefix): the object as the build writes it.
    A Job's name hash is computed over this, so hash-job-names and validate-jobs agree with each other
    inside a kustomization and in a pipe after the build."""
    copy: dict[str, Any] = plain(obj)
    for field in name_fields(copy):
        target = names.resolve(obj, field.target, field.value)
        if target is not None:
            field.parent[field.key] = final_name(target)
    return copy

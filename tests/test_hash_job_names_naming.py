"""Properties of hashed Job names: length, validity (the API server's rule, krmfn/k8s/names.py),
idempotence, what feeds the hash."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from krmfn.functions.hash_job_names import FUNCTION
from krmfn.functions.hash_job_names.naming import MAX_NAME, derived_from, hashed_name, spec_hash
from krmfn.functions.hash_job_names.references import Renames, rewrite_value
from krmfn.k8s.jobspec import MUTABLE_SPEC_FIELDS
from krmfn.k8s.names import name_problems
from krmfn.yaml.io import _load_fast, dump_fast

labels = st.from_regex(r"\A[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\Z", fullmatch=True)
# DNS-1123 subdomains, as the API server accepts for a Job name: dots allowed (``db.migration``).
subdomains = st.from_regex(
    r"\A[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?(\.[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?){0,3}\Z"
)
SPEC: dict[str, Any] = {
    "backoffLimit": 1,
    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "ghcr.io/e/x:1"}]}},
}


@given(st.one_of(labels, subdomains))
def test_hashed_name_is_a_valid_job_name_of_at_most_63(base: str) -> None:
    name = hashed_name(base, spec_hash(SPEC))
    assert len(name) <= MAX_NAME
    assert name_problems("Job", name) == []
    assert derived_from(name, base)


@given(labels, st.sampled_from(["fast", "fidelity"]))
def test_rerun_replaces_the_suffix(base: str, mode: str) -> None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": base}, "spec": SPEC}
    text = dump_fast({"apiVersion": "config.kubernetes.io/v1", "kind": "ResourceList", "items": [job]})
    once, code = FUNCTION.process(text, mode)
    assert code == 0
    twice, _ = FUNCTION.process(once, mode)
    first, second = (_load_fast(t)["items"][0]["metadata"] for t in (once, twice))
    assert first == second
    assert first["annotations"]["krmfn.dev/job-base-name"] == base


def test_key_order_does_not_change_the_hash() -> None:
    reordered = {
        "template": {
            "spec": {"containers": [{"image": "ghcr.io/e/x:1", "name": "c"}], "restartPolicy": "Never"}
        },
        "backoffLimit": 1,
    }
    assert spec_hash(SPEC) == spec_hash(reordered)


def test_list_order_and_values_change_the_hash() -> None:
    two = {"template": {"spec": {"containers": [{"name": "a"}, {"name": "b"}]}}}
    swapped = {"template": {"spec": {"containers": [{"name": "b"}, {"name": "a"}]}}}
    assert spec_hash(two) != spec_hash(swapped)
    assert spec_hash({"completions": 1}) != spec_hash({"completions": "1"})


def test_fields_the_api_lets_change_in_place_do_not_change_the_hash() -> None:
    # The runner applies these to the live Job; a new name would run the Job again.
    for field in MUTABLE_SPEC_FIELDS:
        assert spec_hash({**SPEC, field: 7}) == spec_hash(SPEC), field


def test_truncated_base_never_ends_with_a_dash() -> None:
    base = "a" * 53 + "-" + "tail"
    name = hashed_name(base, "0123abcd")
    assert name == "a" * 53 + "-0123abcd"
    assert name_problems("Job", name) == []
    dotted = "a" * 53 + "." + "tail"
    assert hashed_name(dotted, "0123abcd") == "a" * 53 + "-0123abcd"


def test_derived_from() -> None:
    assert derived_from("migrate-0123abcd", "migrate")
    assert derived_from("migrate", "migrate")
    assert not derived_from("migrate-0123abcz", "migrate")
    assert not derived_from("migrate-extra-0123abcd", "migrate")
    assert not derived_from("other-0123abcd", "migrate")


def test_rewrite_value_keeps_spacing_and_other_entries() -> None:
    renames = Renames()
    renames.add("apps", "migrate", "migrate", "migrate-0123abcd")
    value = " batch/namespaces/apps/Job/migrate ,apps/namespaces/apps/Deployment/migrate,batch/Job/x"
    assert rewrite_value(value, renames) == (
        " batch/namespaces/apps/Job/migrate-0123abcd ,apps/namespaces/apps/Deployment/migrate,batch/Job/x"
    )

"""The keyed checksum (issue 15 item 11): HMAC-SHA256 with a key from an environment variable or a file,
deterministic for a key, different across keys, never quoting the key, and not brute-forceable from the
annotation without it."""

from __future__ import annotations

import hashlib
import hmac
import io
import itertools
from pathlib import Path
from typing import Any

import pytest

from krmfn.functions.set_config_checksum import FUNCTION
from krmfn.k8s.configdigest import checksum
from krmfn.yaml.io import _load_fast, dump_fast

KEY = "k3y-0f-the-ci-system-9c1d2e"
PIN = "4821"  # a low-entropy Secret: 10,000 candidates


def _items(pin: str = PIN) -> list[dict[str, Any]]:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pin"}, "stringData": {"pin": pin}}
    pod = {"containers": [{"name": "c", "image": "app:1", "envFrom": [{"secretRef": {"name": "pin"}}]}]}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"metadata": {}, "spec": pod}},
    }
    return [secret, deployment]


def _run(config: dict[str, Any], pin: str = PIN) -> tuple[int, dict[str, Any], str]:
    rl = {
        "apiVersion": "config.kubernetes.io/v1",
        "kind": "ResourceList",
        "items": _items(pin),
        "functionConfig": {"apiVersion": "fn.krmfn.dev/v1alpha1", "kind": "SetConfigChecksum", **config},
    }
    stdout, stderr = io.StringIO(), io.StringIO()
    code = FUNCTION.main([], io.StringIO(dump_fast(rl)), stdout, stderr)
    return code, _load_fast(stdout.getvalue()), stderr.getvalue()


def _annotation(out: dict[str, Any]) -> str:
    value: str = out["items"][1]["spec"]["template"]["metadata"]["annotations"]["krmfn.dev/config-checksum"]
    return value


def test_the_plain_checksum_of_a_low_entropy_secret_can_be_brute_forced() -> None:
    """Why the keyed mode exists: 10,000 guesses recover the PIN from the public annotation."""
    code, out, _ = _run({})
    assert code == 0
    found = [
        guess
        for guess in ("".join(digits) for digits in itertools.product("0123456789", repeat=4))
        if checksum(_items(guess)[:1]) == _annotation(out)
    ]
    assert found == [PIN]


def test_the_keyed_checksum_is_an_hmac_deterministic_per_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CHECKSUM_KEY", KEY)
    (tmp_path / "key").write_text(KEY + "\n")
    by_env = _annotation(_run({"hmacKeyEnv": "CHECKSUM_KEY"})[1])
    by_file = _annotation(_run({"hmacKeyFile": str(tmp_path / "key")})[1])
    plain = checksum(_items()[:1])
    assert (
        by_env
        == by_file
        == "hmac-sha256:" + hmac.new(KEY.encode(), plain.encode(), hashlib.sha256).hexdigest()
    )
    assert _annotation(_run({"hmacKeyEnv": "CHECKSUM_KEY"})[1]) == by_env  # the same for the same key
    assert _annotation(_run({"hmacKeyEnv": "CHECKSUM_KEY"}, pin="4822")[1]) != by_env  # content still rolls
    monkeypatch.setenv("CHECKSUM_KEY", KEY + "-rotated")
    assert _annotation(_run({"hmacKeyEnv": "CHECKSUM_KEY"})[1]) != by_env
    # Without the key the 10,000 guesses find nothing.
    guesses = ("".join(d) for d in itertools.product("0123456789", repeat=4))
    assert not [g for g in guesses if checksum(_items(g)[:1]) == by_env.replace("hmac-sha256:", "sha256:")]


@pytest.mark.parametrize(
    ("config", "env", "message"),
    [
        ({"hmacKeyEnv": "UNSET_KEY_VAR"}, {}, "the environment variable 'UNSET_KEY_VAR' is not set or empty"),
        ({"hmacKeyEnv": "SHORT_KEY"}, {"SHORT_KEY": "tiny"}, "the key must be at least 16 bytes"),
        ({"hmacKeyFile": "/nonexistent/key"}, {}, "cannot read '/nonexistent/key'"),
        ({"hmacKeyEnv": "A", "hmacKeyFile": "/x"}, {"A": KEY}, "set hmacKeyEnv or hmacKeyFile, not both"),
    ],
)
def test_key_problems_are_config_errors_that_never_quote_the_key(
    monkeypatch: pytest.MonkeyPatch, config: dict[str, Any], env: dict[str, str], message: str
) -> None:
    monkeypatch.delenv("UNSET_KEY_VAR", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    code, out, stderr = _run(config)
    assert code == 1
    assert message in stderr
    assert "annotations" not in str(out["items"][1]["spec"]["template"]["metadata"])  # nothing annotated
    for value in env.values():
        assert value not in stderr and value not in str(out["results"])

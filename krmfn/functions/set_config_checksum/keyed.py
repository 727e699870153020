"""The keyed checksum: HMAC-SHA256 of the plain checksum, with a key kept out of the package.

A plain ``sha256:`` of a low-entropy Secret (a 6-digit PIN, a word) can be brute-forced offline by anyone
who reads the pod template, where the annotation is public. With a key from an environment variable or a
file (a CI secret, never the functionConfig), the annotation is ``hmac-sha256:<hex>``: the same for the
same content and key, so pods still roll exactly when the content changes, and useless without the key.
"""

from __future__ import annotations

import hashlib
import os

from krmfn.errors import ConfigError

PREFIX = "hmac-sha256:"
MIN_KEY_BYTES = 16


def load_key(env: str, path: str) -> bytes | None:
    """The key named by ``hmacKeyEnv`` or ``hmacKeyFile`` (one at most), or None for the plain mode.
    Errors name the variable or the file, never the key."""
    if env and path:
        raise ConfigError("set hmacKeyEnv or hmacKeyFile, not both", "hmacKeyFile")
    if env:
        value = os.environ.get(env)
        if not value:
            raise ConfigError(f"the environment variable {env!r} is not set or empty", "hmacKeyEnv")
        key, where = value.encode("utf-8"), "hmacKeyEnv"
    elif path:
        try:
            with open(path, "rb") as file:
                key = file.read(1 << 16).strip()
        except OSError as err:
            raise ConfigError(f"cannot read {path!r}: {err.strerror}", "hmacKeyFile") from None
        where = "hmacKeyFile"
    else:
        return None
    if len(key) < MIN_KEY_BYTES:
        raise ConfigError(f"the key must be at least {MIN_KEY_BYTES} bytes (use a random one)", where)
    return key


def keyed(digest: str, key: bytes) -> str:
    """``hmac-sha256:`` of a plain ``sha256:<hex>`` checksum (hash, then MAC: the content stays canonical)."""
    import hmac  # the keyed mode only: not on every start

    return PREFIX + hmac.new(key, digest.encode("ascii"), hashlib.sha256).hexdigest()

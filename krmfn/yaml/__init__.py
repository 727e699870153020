"""The one YAML layer: ``fast`` (libyaml: YAML 1.2 scalars, duplicate keys, alias bombs, the quoting
every reader in the chain needs), ``io`` (reading and writing through it, within the input limits),
``edit`` (the faithful writer every output goes through; docs/fidelity.md) and ``rt`` (ruamel configured
as kpt writes: ``render --in-place`` layout and the tests' oracle). Nothing else in krmfn parses YAML."""

from __future__ import annotations

import re
import sys

from krmfn.patterns import Deferred

# PyYAML's pure-Python reader compiles this at import (a class attribute of yaml.reader.Reader): 57
# million instructions, ~12 ms, a fifth of a function's whole start. krmfn reads with libyaml's C
# parser and never uses it (only PyYAML's pure-Python loaders do), so while ``yaml`` is imported the
# pattern is a stand-in in ``re``'s compile cache that compiles the real one when first used.
_PYYAML_NON_PRINTABLE = "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"


def _import_pyyaml() -> None:
    """``import yaml`` without compiling the pattern above. Only ``re``'s cache is involved: where a
    Python version keys it otherwise, the stand-in is never found and the pattern compiles as before."""
    if "yaml" in sys.modules:
        return
    key = (str, _PYYAML_NON_PRINTABLE, 0)
    caches = [c for c in (getattr(re, "_cache", None), getattr(re, "_cache2", None)) if isinstance(c, dict)]
    if caches:
        caches[0].setdefault(key, Deferred(_PYYAML_NON_PRINTABLE))
    try:
        import yaml  # noqa: F401
    finally:
        for cache in caches:
            if isinstance(cache.get(key), Deferred):
                del cache[key]


_import_pyyaml()

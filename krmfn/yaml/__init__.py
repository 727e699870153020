"""The one YAML layer: ``fast`` (libyaml: YAML 1.2 scalars, duplicate keys, alias bombs, the quoting
every reader in the chain needs), ``io`` (reading and writing through it, within the input limits),
``edit`` (the faithful writer every output goes through; docs/fidelity.md) and ``rt`` (ruamel configured
as kpt writes: ``render --in-place`` layout and the tests' oracle). Nothing else in krmfn parses YAML."""

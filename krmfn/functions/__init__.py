"""The krmfn functions, one package per function (see krmfn.registry for the canonical order)."""

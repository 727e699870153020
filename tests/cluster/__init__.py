"""The real Kubernetes control plane krmfn's runner is tested against (see README.md)."""

"""pytest configuration shared by all of krmfn's tests."""

# Fixtures for tests against the real control plane: cluster, kubeconfig, kube_client, namespace
# (see tests/cluster/plugin.py). The cluster only starts when a test asks for one of them.
pytest_plugins = [f"{__package__}.cluster.plugin" if __package__ else "cluster.plugin"]

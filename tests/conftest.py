"""pytest configuration shared by all of krmfn's tests."""

import signal

# A suite started with SIGINT ignored (``./scripts/test.sh &`` in a script: a non-interactive shell
# starts background commands so) hands the ignore to every child, and Go tools (kapp, kpt, Helm) and
# krmfn keep an inherited ignore: the tests that interrupt them mid-wait saw them run on (kapp to the end,
# kpt until killed). Their users press Ctrl-C at a terminal, where SIGINT is at its default; a handled
# signal is reset to the default in a child at exec, so the suite's children start as theirs do.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

# Fixtures for tests against the real control plane: cluster, kubeconfig, kube_client, namespace
# (see tests/cluster/plugin.py). The cluster only starts when a test asks for one of them.
pytest_plugins = [f"{__package__}.cluster.plugin" if __package__ else "cluster.plugin"]

#!/usr/bin/env bash
# The container runtime of the test bed's real node (tests/cluster/node.py): Debian's containerd (1.6)
# with runc (crun refuses the mixed cgroup v1/v2 mounts of these machines), the CNI plugins (bridge,
# host-local, loopback) and nft (kube-proxy's nftables mode). As root it installs what is missing;
# otherwise it checks and says what to install. Nothing is started or enabled here: the node starts its
# own containerd with its own socket, state and configuration (written by node.py), so a containerd of
# the machine, if any, is left alone.
set -euo pipefail
packages=(containerd runc containernetworking-plugins nftables)

missing=()
command -v containerd >/dev/null || missing+=(containerd)
command -v ctr >/dev/null || missing+=(containerd)
command -v runc >/dev/null || missing+=(runc)
for plugin in bridge host-local loopback; do
  [ -x "/usr/lib/cni/$plugin" ] || { missing+=(containernetworking-plugins); break; }
done
command -v nft >/dev/null || missing+=(nftables)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "error: the real node's tests need ${missing[*]} and run as root: sudo apt-get install ${packages[*]}" >&2
  exit 1
fi
echo "installing ${packages[*]}..." >&2
# Another engineer's script may hold apt's locks for a while: wait for them instead of failing.
apt_get() { apt-get -o DPkg::Lock::Timeout=600 "$@"; }
apt_get update -qq
DEBIAN_FRONTEND=noninteractive apt_get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null

#!/usr/bin/env bash
# The container engine the image tests run on: Debian's podman with runc, podman-docker (a `docker`
# command for kustomize's `container:` functions) and mmdebstrap (the local Python base image).
# As root it installs what is missing and writes the engine settings that work on these machines
# (crun fails here on cgroups and rlimits); otherwise it checks and says what to install.
set -euo pipefail
packages=(podman runc podman-docker mmdebstrap)
CONF=/etc/containers/containers.conf.d/50-krmfn.conf

missing=()
command -v podman >/dev/null || missing+=(podman)
command -v runc >/dev/null || missing+=(runc)
[ -x /usr/bin/docker ] && grep -q podman /usr/bin/docker 2>/dev/null || missing+=(podman-docker)
command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)

if [ "$(id -u)" != 0 ]; then
  if [ ${#missing[@]} -gt 0 ]; then
    echo "error: the container image tests need ${missing[*]}: sudo apt-get install ${packages[*]}" >&2
    exit 1
  fi
  exit 0
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}..." >&2
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${packages[@]}" >/dev/null
fi

# A drop-in, so an existing containers.conf stays as it is; explicit ulimits because the defaults
# copy the host's, which runc cannot always set inside these machines.
if [ ! -f "$CONF" ]; then
  mkdir -p "$(dirname "$CONF")"
  cat > "$CONF" <<'EOF'
# Written by krmfn's scripts/install-podman.sh.
[containers]
default_ulimits = ["nofile=4096:4096", "nproc=4096:4096"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
EOF
fi
# podman-docker prints a notice on every `docker` call unless this file exists; kustomize shows it.
[ -e /etc/containers/nodocker ] || touch /etc/containers/nodocker

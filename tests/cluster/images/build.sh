#!/usr/bin/env bash
# Builds the real node's images with podman from Debian's packages, without a container registry:
#   pause     the sandbox image: the static tests/cluster/build/pause program alone (FROM scratch)
#   postgres  PostgreSQL 15 (Debian's postgresql-15), started by postgres/start.sh
#   app       python3 and psql (postgresql-client-15) with app/app.py: the demo app of
#             examples/staged-deploy-real, and the general test image (sh, coreutils)
# postgres and app share one base made by mmdebstrap (postgresql-15 and python3: one download, one layer
# in containerd). Each image is tagged by the content it is built from (recipe, files, base), so a second
# run only checks that the tags exist. Prints "NAME IMAGE" per line; tests/cluster/node.py imports the
# images into the node's containerd.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
. "$root/scripts/cache-env.sh"
. "$root/scripts/debian-image.sh"
bash "$root/scripts/install-podman.sh"
PREFIX=localhost/krmfn-node-
SUITE=bookworm

# One build at a time on a machine: worktrees share podman's storage (the lock of scripts/build-image.sh,
# which holds it for minutes while it builds): taken only when something is missing.
lock() { [ -n "${locked:-}" ] || { exec 9>"$KRMFN_CACHE/image-build.lock"; flock 9; locked=1; }; }

bin=$(bash "$here/../build.sh")  # the pause program
# Without what only PostgreSQL's JIT uses (LLVM, z3 and the bitcode: 150 MB; start.sh turns jit off)
# and without apt's package lists.
debian_recipe "$SUITE" postgresql-15,python3 \
  --dpkgopt='path-exclude=/usr/lib/*/libLLVM-*' --dpkgopt='path-exclude=/usr/lib/*/libz3.*' \
  --dpkgopt='path-exclude=/usr/lib/postgresql/*/lib/bitcode/*' \
  --dpkgopt='path-exclude=/usr/lib/postgresql/*/lib/llvmjit*' \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*'
base="${PREFIX}debian:$SUITE-$(debian_recipe_hash)"
podman image exists "$base" || { lock; debian_import "$base" node-debian; }

# build NAME BASE CONTEXT-FILE...: podman build of $here/NAME/Containerfile FROM BASE ("" for none) with
# the files given, tagged by their content and the base's id.
build() {
  local name=$1 from=$2; shift 2
  local files=("$here/$name/Containerfile" "$@")
  local tag
  tag=$({ sha256sum "${files[@]}" | awk '{print $1}'; stat -c %a "${files[@]}"
          [ -z "$from" ] || podman image inspect --format '{{.Id}}' "$from"; } | sha256sum | cut -c1-12)
  local image="$PREFIX$name:$tag"
  if ! podman image exists "$image"; then
    lock
    local context
    context=$(mktemp -d "$KRMFN_CACHE/node-image.XXXXXX")
    cp -p "${files[@]}" "$context/"
    podman build --quiet --network none --build-arg "BASE=$from" --tag "$image" \
      --file "$context/Containerfile" "$context" >/dev/null
    rm -rf "$context"
    echo "built $image" >&2
    # Older builds go after a day (not sooner: another worktree may be testing them).
    podman images --filter "reference=$PREFIX$name" --filter until=24h --format '{{.Repository}}:{{.Tag}}' \
      | grep -v -F -e ":$tag" | xargs -r podman rmi --ignore >/dev/null 2>&1 || true
  fi
  echo "$name $image"
}
build pause "" "$bin/krmfn-pause"
build postgres "$base" "$here/postgres/start.sh"
build app "$base" "$here/app/app.py"

#!/usr/bin/env bash
# Builds the function images with podman, without a container registry and without network inside
# the build: a Python base image made from Debian packages (mmdebstrap, then `podman import`), and
# krmfn's wheels made on the host with `pip wheel` (the air-gapped path of docs/container.md).
#
#   scripts/build-image.sh [FUNCTION...]    default: the six functions and render
#
# Prints "FUNCTION IMAGE" per line. Images are tagged by the content they are built from (sources,
# Dockerfile, pinned dependency versions, base image), so a second run with nothing changed only
# checks that the tags exist; each is also tagged PREFIX<function>:<krmfn version>. Environment:
#   PYTHON               the interpreter whose `pip wheel` builds the wheels and whose installed
#                        dependency versions the image pins (default: python3 on PATH)
#   KRMFN_BASE_SUITE     the Debian suite of the base image (default: bookworm, Python 3.11)
#   KRMFN_DEBIAN_MIRROR  a mirror for mmdebstrap (default: its own, plus updates and security)
#   KRMFN_IMAGE_PREFIX   image names are PREFIX<function> (default: localhost/krmfn-)
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/cache-env.sh
bash scripts/install-podman.sh

PYTHON=${PYTHON:-python3}
SUITE=${KRMFN_BASE_SUITE:-bookworm}
PREFIX=${KRMFN_IMAGE_PREFIX:-localhost/krmfn-}
# One interpreter start for the version, the function names and the pins: the installed versions of
# krmfn's runtime dependencies, transitively (the image runs what the tests ran with; krmfn itself is
# built from the sources, and test tools do not reach the image or its cache key).
facts=$("$PYTHON" - <<'PY'
import importlib.metadata as md
import re
import krmfn
from krmfn.registry import CANONICAL_ORDER
print(krmfn.__version__)
print(*CANONICAL_ORDER, "render")
pins, todo = {}, ["krmfn"]
while todo:
    for requirement in md.requires(todo.pop()) or []:
        name = re.match(r"[A-Za-z0-9._-]+", requirement)
        if "extra ==" in requirement or not name:
            continue
        key = re.sub(r"[-_.]+", "-", name.group()).lower()
        if key in pins:
            continue
        try:
            pins[key] = md.version(key)
        except md.PackageNotFoundError:
            continue  # a dependency for another platform or Python (its marker does not apply here)
        todo.append(key)
print("\n".join(f"{name}=={version}" for name, version in sorted(pins.items())))
PY
)
VERSION=$(sed -n 1p <<< "$facts")
constraints=$(sed -n '3,$p' <<< "$facts")
if [ $# -gt 0 ]; then
  functions=("$@")
else
  read -r -a functions <<< "$(sed -n 2p <<< "$facts")"
fi

# One build at a time on a machine: worktrees share podman's storage and the base image.
exec 9>"$KRMFN_CACHE/image-build.lock"
flock 9

# The base: python3 and CA certificates (set-image's registry lookups) on a minimal Debian.
. scripts/debian-image.sh
debian_recipe "$SUITE" python3,ca-certificates
base="${PREFIX}python-base:$SUITE-$(debian_recipe_hash)"
debian_import "$base" python-base --change 'CMD ["python3"]'

source_hash=$(
  {
    cat Dockerfile .dockerignore pyproject.toml README.md scripts/build-image.sh
    find krmfn -type f ! -path '*/__pycache__/*' ! -name '*.pyc' -print0 | LC_ALL=C sort -z \
      | xargs -0 sha256sum
    printf '%s\n' "$constraints"
    podman image inspect --format '{{.Id}}' "$base"
  } | sha256sum | cut -c1-12
)

existing=$(podman images --format '{{.Repository}}:{{.Tag}} {{.ID}}')
has() { grep -q -F -x -e "$1 $2" <<< "$existing"; }
id_of() { awk -v ref="$1" '$1 == ref { print $2 }' <<< "$existing"; }
todo=()
for fn in "${functions[@]}"; do
  [ -n "$(id_of "$PREFIX$fn:$source_hash")" ] || todo+=("$fn")
done

if [ ${#todo[@]} -gt 0 ]; then
  start=$SECONDS
  context=$(mktemp -d "$KRMFN_CACHE/image-context.XXXXXX")
  trap 'rm -rf "$context"' EXIT
  tar --exclude=__pycache__ --exclude='*.pyc' -cf - Dockerfile .dockerignore pyproject.toml README.md krmfn \
    | tar -xf - -C "$context"
  printf '%s\n' "$constraints" > "$context/constraints.txt"
  "$PYTHON" -m pip wheel --quiet --disable-pip-version-check --wheel-dir "$context/wheels" \
    --constraint "$context/constraints.txt" "$context" pip >&2
  host_python=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  image_python=$(podman run --rm --network none "$base" \
    python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  if [ "$host_python" != "$image_python" ]; then
    echo "error: $PYTHON is Python $host_python but $base has $image_python: the wheels would not" \
      "fit; set PYTHON to a $image_python interpreter or KRMFN_BASE_SUITE to a matching suite" >&2
    exit 1
  fi
  for fn in "${todo[@]}"; do
    podman build --quiet --network none --label "dev.krmfn.source=$source_hash" \
      --build-arg "PYTHON_IMAGE=$base" --build-arg WHEELS=local --build-arg "FUNCTION=$fn" \
      --tag "$PREFIX$fn:$source_hash" "$context" >/dev/null
  done
  echo "built ${#todo[@]} image(s) in $((SECONDS - start))s" >&2
  # Older builds of these images go after a day (not sooner: another worktree may be testing them).
  for fn in "${functions[@]}"; do
    podman images --filter "reference=$PREFIX$fn" --filter until=24h --format '{{.Repository}}:{{.Tag}}' \
      | grep -v -F -e ":$source_hash" -e ":$VERSION" | xargs -r podman rmi --ignore >/dev/null 2>&1 || true
  done
fi

# Also under the names the functions' metadata.yaml promise (PREFIX<function>:<version>), pointing at
# this checkout's build.
[ ${#todo[@]} -eq 0 ] || existing=$(podman images --format '{{.Repository}}:{{.Tag}} {{.ID}}')
for fn in "${functions[@]}"; do
  id=$(id_of "$PREFIX$fn:$source_hash")
  has "$PREFIX$fn:$VERSION" "$id" || podman tag "$PREFIX$fn:$source_hash" "$PREFIX$fn:$VERSION"
  echo "$fn $PREFIX$fn:$source_hash"
done

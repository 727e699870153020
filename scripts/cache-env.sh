# Sourced by the build scripts: every Go build artefact krmfn's tests need lives under one directory,
# so a second run on the same machine starts in seconds.
KRMFN_CACHE="${KRMFN_CACHE:-$HOME/.cache/krmfn}"
export KRMFN_CACHE
export GOMODCACHE="$KRMFN_CACHE/gomod"
export GOCACHE="$KRMFN_CACHE/gobuild"
export GOFLAGS="-mod=mod -buildvcs=false"
export CGO_ENABLED=0
KRMFN_BIN="$KRMFN_CACHE/bin"
export KRMFN_BIN
mkdir -p "$KRMFN_BIN"

# build_once NAME STAMP CMD...: run CMD unless $KRMFN_BIN/NAME exists and was built for STAMP.
# Two checkouts on one machine (a second worktree, a test that builds what it needs) share the cache:
# the build of NAME holds $KRMFN_CACHE/locks/NAME.lock, and whoever waited for it finds it built.
build_once() {
  local name=$1 stamp=$2; shift 2
  built() { [ -x "$KRMFN_BIN/$name" ] && [ "$(cat "$KRMFN_BIN/.$name.stamp" 2>/dev/null)" = "$stamp" ]; }
  built && return 0
  mkdir -p "$KRMFN_CACHE/locks"
  local status=0
  (
    flock -w 3600 9 || { echo "error: waited an hour for another build of $name to end" >&2; exit 1; }
    built && exit 0
    echo "building $name ($stamp)..." >&2
    start=$SECONDS
    "$@" || { echo "error: building $name failed" >&2; exit 1; }
    echo "$stamp" > "$KRMFN_BIN/.$name.stamp"
    echo "built $name in $((SECONDS - start))s" >&2
  ) 9>"$KRMFN_CACHE/locks/$name.lock" || status=$?
  return "$status"
}

# publish_once NAME MARKER CMD...: run CMD unless the file MARKER exists and is not empty, under
# $KRMFN_CACHE/locks/NAME.lock as build_once does: what the scripts fetch into the shared cache (CRDs, peer
# charts) is written by one checkout at a time, and whoever waited finds it written (two writers of one
# temporary directory once made a clean CI run fail).
publish_once() {
  local name=$1 marker=$2; shift 2
  [ -s "$marker" ] && return 0
  mkdir -p "$KRMFN_CACHE/locks"
  (
    flock -w 3600 9 || { echo "error: waited an hour for another writer of $name to end" >&2; exit 1; }
    [ -s "$marker" ] && exit 0
    "$@"
  ) 9>"$KRMFN_CACHE/locks/$name.lock"
}

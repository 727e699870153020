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
build_once() {
  local name=$1 stamp=$2; shift 2
  if [ -x "$KRMFN_BIN/$name" ] && [ "$(cat "$KRMFN_BIN/.$name.stamp" 2>/dev/null)" = "$stamp" ]; then
    return 0
  fi
  echo "building $name ($stamp)..." >&2
  local start=$SECONDS
  "$@" || { echo "error: building $name failed" >&2; return 1; }
  echo "$stamp" > "$KRMFN_BIN/.$name.stamp"
  echo "built $name in $((SECONDS - start))s" >&2
}

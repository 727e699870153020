# Sourced by the image builds (scripts/build-image.sh, tests/cluster/images/build.sh): a base image made
# from Debian's packages with mmdebstrap and `podman import`, without a container registry.

# debian_recipe SUITE PACKAGES [MMDEBSTRAP-OPTION...]: sets DEBIAN_RECIPE to the mmdebstrap command that
# writes a minimal Debian with PACKAGES (comma-separated) as a tar on stdout: merged /usr without the
# usrmerge package (it pulls in perl), no manuals, docs or translations. The command's words are the
# image's cache key.
debian_recipe() {
  local suite=$1 packages=$2; shift 2
  DEBIAN_RECIPE=(
    mmdebstrap --quiet --variant=minbase "--include=$packages"
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*'
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/doc/*'
    --dpkgopt='path-include=/usr/share/doc/*/copyright'
    "$@" --format=tar "$suite" -
  )
  [ -z "${KRMFN_DEBIAN_MIRROR:-}" ] || DEBIAN_RECIPE+=("$KRMFN_DEBIAN_MIRROR")
}

# debian_recipe_hash: 12 hex digits of DEBIAN_RECIPE, for the image's tag.
debian_recipe_hash() { printf '%s\n' "${DEBIAN_RECIPE[@]}" | sha256sum | cut -c1-12; }

# debian_import IMAGE NAME [PODMAN-IMPORT-OPTION...]: runs DEBIAN_RECIPE and imports its tar as IMAGE,
# unless IMAGE exists. NAME names the scratch tar and the log under $KRMFN_CACHE.
debian_import() {
  local image=$1 name=$2 start=$SECONDS; shift 2
  podman image exists "$image" && return 0
  echo "building $image from Debian packages..." >&2
  local tarball="$KRMFN_CACHE/$name.tar" log="$KRMFN_CACHE/$name.log"
  # Into a file first: a failed mmdebstrap must not leave a truncated base behind a valid tag.
  if ! "${DEBIAN_RECIPE[@]}" > "$tarball" 2> "$log"; then
    tail -n 20 "$log" >&2
    echo "error: mmdebstrap failed (log: $log)" >&2
    rm -f "$tarball"
    return 1
  fi
  podman import --quiet "$@" "$tarball" "$image" >/dev/null
  rm -f "$tarball"
  echo "built $image in $((SECONDS - start))s" >&2
}

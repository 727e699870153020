#!/usr/bin/env bash
# The README's test command on a busy machine (issue 30): a clean clone of HEAD runs .ci/run while
# HOGS processes (2 by default) each keep a core busy, as other work does on a laptop or a shared CI
# runner. Prints the exit code, the wall time and the load average seen once a minute.
#   bash bench/busy_suite.sh [RUNS] [HOGS]    (logs under ${BUSY_DIR:-/tmp/krmfn-busy})
set -uo pipefail
runs=${1:-1}
hogs=${2:-2}
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${BUSY_DIR:-/tmp/krmfn-busy}
mkdir -p "$out"
pids=()
stop() { kill "${pids[@]}" 2>/dev/null; wait 2>/dev/null; }
trap stop EXIT
for _ in $(seq "$hogs"); do
  python3 -c 'while True: pass' &
  pids+=($!)
done
( while sleep 60; do cut -d' ' -f1-3 /proc/loadavg; done ) >"$out/load.log" &
pids+=($!)
printf '| run | commit | exit | wall s | load average (min-max of 1-min) |\n|---:|---|---:|---:|---|\n'
for run in $(seq "$runs"); do
  clone="$out/clone-$run"
  rm -rf "$clone" && git clone -q "$repo" "$clone"
  start=$(date +%s)
  : >"$out/load.log"
  (cd "$clone" && bash .ci/run) >"$out/run-$run.log" 2>&1
  code=$?
  wall=$(($(date +%s) - start))
  load=$(awk '{print $1}' "$out/load.log" | sort -n | sed -n '1p;$p' | paste -sd- -)
  printf '| %s | %s | %s | %s | %s |\n' "$run" "$(git -C "$clone" rev-parse --short HEAD)" "$code" "$wall" "${load:-n/a}"
  tail -n 3 "$out/run-$run.log" | sed 's/^/    /'
done

#!/usr/bin/env bash
# Runs the probes of `main.swift` here (the drivers behind "Issue 44" in Benchmarks/README.md)
# against this checkout and, with `--base DIR`, against another, alternately, so that the machine's
# drift hits both alike. Release builds; `perf record -g` works on the binaries it leaves in the
# temporary folder's driver-*/.build while it runs.
#
# Usage, from anywhere: bash Benchmarks/Probes/probe.sh [--base DIR] [KIND [SHIFT]]
#   DIR is the root of the other checkout (`git worktree add /tmp/base 047eb64`); KIND is access
#   (the default), submit, wakeup, values or quiet, SHIFT as main.swift says. Three rounds, or
#   PROBE_ROUNDS; PORTABLE=1 builds both with EXCLUSION_PORTABLE_LOCK (`driver.sh`).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
base=""
if [[ "${1:-}" == "--base" ]]; then base="$(cd "$2" && pwd)"; shift 2; fi
[[ $# -eq 0 ]] && set -- access
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# shellcheck source=../driver.sh
source "$here/../driver.sh"

build() {  # build SIDE CHECKOUT: the driver against CHECKOUT, as $work/SIDE.bin
    build_driver probe "$here/main.swift" "$1" "$2"
}

build this "$root"
[[ -n "$base" ]] && build base "$base"
for round in $(seq 1 "${PROBE_ROUNDS:-3}"); do
    [[ -n "$base" ]] && echo "base, round $round: $("$work/base.bin" "$@")"
    echo "this, round $round: $("$work/this.bin" "$@")"
done

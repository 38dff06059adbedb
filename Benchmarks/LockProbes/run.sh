#!/usr/bin/env bash
# Builds the lock probes against ExclusionShims and runs the cases the lock's numbers come from.
# Usage: bash Benchmarks/LockProbes/run.sh [--build-only]   (Linux; needs a C compiler: cc, gcc or clang)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shims="$here/../../Sources/ExclusionShims"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cc=$(command -v cc || command -v gcc || command -v clang)
"$cc" -O2 -o "$out/cost" "$here/cost.c" -lpthread
"$cc" -O2 -I "$shims/include" -o "$out/contention" "$here/contention.c" "$shims/ExclusionShims.c" -lpthread
if [ "${1:-}" = "--build-only" ]; then exit 0; fi
"$out/cost"
for case in "2 0 0" "2 100 100" "2 1000 1000" "3 30 30" "4 100 300" "4 1000 0"; do
    # shellcheck disable=SC2086
    "$out/contention" $case
done

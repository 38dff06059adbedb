#!/usr/bin/env bash
# Builds the lock probes against ExclusionShims and runs them: what a lock's fast path and a fence
# cost, then the contention matrix against pthread_mutex_t. See README.md here.
# Usage: bash Benchmarks/LockProbes/run.sh [--build-only] [RUNS [SECONDS]]   (Linux; needs cc, gcc or clang)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shims="$here/../../Sources/ExclusionShims"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cc=$(command -v cc || command -v gcc || command -v clang)
"$cc" -O2 -o "$out/cost" "$here/cost.c" -lpthread
"$cc" -O2 -I "$shims/include" -o "$out/contention" "$here/contention.c" "$shims/ExclusionLock.c" \
    "$shims/ExclusionShims.c" "$shims/ExclusionPlatform.c" -lpthread
if [ "${1:-}" = "--build-only" ]; then exit 0; fi
"$out/cost"
echo
"$out/contention" --matrix "${1:-3}" "${2:-0.3}"

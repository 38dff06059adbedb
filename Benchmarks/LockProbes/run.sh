#!/usr/bin/env bash
# Builds the lock probes against ExclusionShims and runs them: what a lock's fast path and a fence
# cost, then the contention matrix against pthread_mutex_t. See README.md here.
# Usage: bash Benchmarks/LockProbes/run.sh [--build-only] [RUNS [SECONDS]]   (Linux; needs cc, gcc or clang)
#        bash Benchmarks/LockProbes/run.sh --portable [BUSY [RUNS [SECONDS]]]
#   --portable: the matrix of the portable build's owned lock (the Apple design) against its
#   stand-in for os_unfair_lock alone, beside BUSY loops that only spin (default 0).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shims="$here/../../Sources/ExclusionShims"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
cc=$(command -v cc || command -v gcc || command -v clang)
"$cc" -O2 -o "$out/cost" "$here/cost.c" -lpthread
"$cc" -O2 -I "$shims/include" -o "$out/contention" "$here/contention.c" "$shims/ExclusionLock.c" \
    "$shims/ExclusionShims.c" "$shims/ExclusionPlatform.c" -lpthread
"$cc" -O2 -DEXCLUSION_PORTABLE_LOCK -I "$shims/include" -o "$out/contention-portable" "$here/contention.c" \
    "$shims/ExclusionOwnedLock.c" "$shims/ExclusionShims.c" "$shims/ExclusionPlatform.c" -lpthread
if [ "${1:-}" = "--build-only" ]; then exit 0; fi
if [ "${1:-}" = "--portable" ]; then
    loops=()
    trap 'kill "${loops[@]}" 2>/dev/null; rm -rf "$out"' EXIT
    for _ in $(seq "${2:-0}"); do
        sh -c 'while :; do :; done' &
        loops+=($!)
    done
    "$out/contention-portable" --matrix "${3:-3}" "${4:-0.3}"
    exit 0
fi
"$out/cost"
echo
"$out/contention" --matrix "${1:-3}" "${2:-0.3}"

#!/usr/bin/env bash
# Shows why, under ThreadSanitizer, tests on the shared pool finish in bursts minutes apart (the
# soak's "Under load" section in README.md): the Swift runtime on Linux, when ThreadSanitizer is on,
# marks every `swift::once` as never finished (it stores 1 where it would store -1), so that each
# check takes the once's lock and ThreadSanitizer sees the ordering. That lock is a
# priority-inheritance futex, which hands itself to the waiters one at a time; the lazily made
# metadata cache of `Optional`, which unoptimized code asks for constantly, is behind such a once.
# Many threads then form a convoy on one lock, and on a busy machine every hand-off waits for the
# next owner to be scheduled.
#
# Usage: bash Verification/tsan-once.sh [CALLS] [THREADS] [BUSY]
#   the same CALLS (default 40000) on 1 thread and on THREADS (default 8), without and with
#   ThreadSanitizer, on a quiet machine and beside BUSY (default 4) busy loops
set -euo pipefail
cd "$(dirname "$0")"
calls=${1:-40000}
threads=${2:-8}
busy=${3:-4}
out=../.build-soak/tsan-once
mkdir -p "$out"
swiftc -Onone tsan-once/main.swift -o "$out/plain"
swiftc -Onone -sanitize=thread tsan-once/main.swift -o "$out/tsan"

loops=()
# shellcheck disable=SC2317 # called by the trap
stop_loops() { [ ${#loops[@]} -eq 0 ] || kill "${loops[@]}" 2>/dev/null || true; loops=(); }
trap stop_loops EXIT

echo "seconds for $calls calls of [Int].min(), unoptimized, on $(nproc) cores"
printf '%-28s %10s %10s %10s %10s\n' "" "plain, 1" "plain, $threads" "tsan, 1" "tsan, $threads"
for load in 0 "$busy"; do
    for _ in $(seq "$load"); do
        sh -c 'while :; do :; done' &
        loops+=($!)
    done
    row=()
    for binary in plain tsan; do
        for n in 1 "$threads"; do row+=("$("$out/$binary" "$n" "$calls")"); done
    done
    printf '%-28s %10s %10s %10s %10s\n' "beside $load busy loops" "${row[@]}"
    stop_loops
done

#!/usr/bin/env bash
# Instructions per uncontended operation, counted by valgrind, in this checkout and, with
# `--base DIR`, in another checkout of the package: an A/B that the machine's noise can't move,
# for changes too small for a timing benchmark to resolve on two busy vCPUs.
#
# Usage, from anywhere: bash Benchmarks/InstructionCounts/icount.sh [--base DIR]
#   DIR is the root of the other checkout, for example `git worktree add /tmp/base HEAD~1`.
#
# Each side is built in release mode against its checkout, stripped of debug info (valgrind 3.19
# can't read the toolchain's DWARF 5), and run with N and 2N operations; the difference over N
# cancels start-up. Counts move by one or two instructions with the code around the loop, so only
# larger differences mean something. Needs valgrind.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
base=""
if [[ "${1:-}" == "--base" ]]; then base="$(cd "$2" && pwd)"; fi
command -v valgrind >/dev/null || { echo "icount.sh needs valgrind" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# shellcheck source=../driver.sh
source "$here/../driver.sh"

build() {  # build SIDE CHECKOUT: the driver against CHECKOUT, as $work/SIDE.bin
    build_driver icount "$here/main.swift" "$1" "$2"
    strip --strip-debug "$work/$1.bin"
}

instructions() {  # instructions BINARY KIND COUNT
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$1" "$2" "$3" 2>&1 \
        | awk '/I *refs/ { gsub(",", "", $NF); print $NF }'
}

per_operation() {  # per_operation BINARY KIND
    local n=100000 one two
    one=$(instructions "$1" "$2" $n)
    two=$(instructions "$1" "$2" $((2 * n)))
    echo $(((two - one + n / 2) / n))
}

build this "$root"
[[ -n "$base" ]] && build base "$base"
if [[ -n "$base" ]]; then
    echo "| Operation | Base (instructions) | This (instructions) |"
    echo "|---|---:|---:|"
else
    echo "| Operation | Instructions |"
    echo "|---|---:|"
fi
for kind in access read write await profiled; do
    if [[ -n "$base" ]]; then
        echo "| $kind | $(per_operation "$work/base.bin" $kind) | $(per_operation "$work/this.bin" $kind) |"
    else
        echo "| $kind | $(per_operation "$work/this.bin" $kind) |"
    fi
done

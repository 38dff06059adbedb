#!/usr/bin/env bash
# Runs the probes of `main.swift` here (the drivers behind "Issue 44" in Benchmarks/README.md)
# against this checkout and, with `--base DIR`, against another, alternately, so that the machine's
# drift hits both alike. Release builds; `perf record -g` works on the binaries it leaves in the
# temporary folder's driver-*/.build while it runs.
#
# Usage, from anywhere: bash Benchmarks/Probes/probe.sh [--base DIR] [KIND [SHIFT]]
#   DIR is the root of the other checkout (`git worktree add /tmp/base 047eb64`); KIND is access
#   (the default) or submit, SHIFT as main.swift says. Three rounds.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
base=""
if [[ "${1:-}" == "--base" ]]; then base="$(cd "$2" && pwd)"; shift 2; fi
[[ $# -eq 0 ]] && set -- access
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

build() {  # build SIDE CHECKOUT: the driver against CHECKOUT, as $work/SIDE.bin
    mkdir -p "$work/driver-$1/Sources/probe"
    cp "$here/main.swift" "$work/driver-$1/Sources/probe/main.swift"
    cat >"$work/driver-$1/Package.swift" <<PACKAGE
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "probe", platforms: [.macOS(.v15)], dependencies: [.package(path: "$2")],
    targets: [.executableTarget(name: "probe", dependencies: [.product(name: "Exclusion", package: "$(basename "$2")")])])
PACKAGE
    swift build -c release --package-path "$work/driver-$1" >"$work/$1.log" 2>&1 || { cat "$work/$1.log" >&2; exit 1; }
    cp "$work/driver-$1/.build/release/probe" "$work/$1.bin"
}

build this "$root"
[[ -n "$base" ]] && build base "$base"
for round in 1 2 3; do
    [[ -n "$base" ]] && echo "base, round $round: $("$work/base.bin" "$@")"
    echo "this, round $round: $("$work/this.bin" "$@")"
done

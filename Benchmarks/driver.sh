# Sourced by the scripts that build a one-file driver against a checkout of the package
# (InstructionCounts/icount.sh, Probes/probe.sh). Needs `work`, a temporary folder.

# build_driver NAME SOURCE SIDE CHECKOUT: builds SOURCE (a main.swift) as the release executable
# NAME, against the package at CHECKOUT, and copies it to $work/SIDE.bin. With PORTABLE=1 in the
# environment, builds with EXCLUSION_PORTABLE_LOCK, the Apple platforms' design on Linux.
build_driver() {
    local name=$1 source=$2 side=$3 checkout=$4
    mkdir -p "$work/driver-$side/Sources/$name"
    cp "$source" "$work/driver-$side/Sources/$name/main.swift"
    cat >"$work/driver-$side/Package.swift" <<PACKAGE
// swift-tools-version:6.0
import PackageDescription
let package = Package(
    name: "$name", platforms: [.macOS(.v15)], dependencies: [.package(path: "$checkout")],
    targets: [.executableTarget(name: "$name", dependencies: [.product(name: "Exclusion", package: "$(basename "$checkout")")])])
PACKAGE
    local flags=()
    [[ "${PORTABLE:-0}" == 1 ]] && flags=(-Xcc -DEXCLUSION_PORTABLE_LOCK -Xswiftc -DEXCLUSION_PORTABLE_LOCK)
    swift build -c release "${flags[@]}" --package-path "$work/driver-$side" >"$work/$side.log" 2>&1 \
        || { cat "$work/$side.log" >&2; exit 1; }
    cp "$work/driver-$side/.build/release/$name" "$work/$side.bin"
}

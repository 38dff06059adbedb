#!/usr/bin/env bash
# Builds every target of the package for Apple platforms against real Apple SDKs, on Linux, the way a
# first `swift build --build-tests` on a Mac would compile it: libraries, both tools, the fuzzer, the
# test-support modules and every test target, Swift and C, each compiled by SwiftPM for the SDK's
# platform with the flags SwiftPM passes there, every warning an error (Swift's with
# -warnings-as-errors; a C warning in the build's output fails its module too, since SwiftPM takes
# -Werror for a Swift flag). Nothing is linked or run.
#
# Usage: bash Verification/apple-typecheck.sh SDK...
#   SDK: an Apple SDK folder (MacOSX*.sdk or iPhoneOS*.sdk, with its SDKSettings.json). README.md
#   ("Platforms") says where the public copies come from. Prints one line per SDK and module, and
#   exits non-zero if any module of any SDK fails. APPLE_TYPECHECK_TARGETS="A B" builds only those.
#
# What each SDK is built as:
# - macOS SDKs: arm64-apple-macosx15.0, the package's oldest macOS; `CHILD_PROCESSES` on, as the
#   package sets it for macOS (exit tests, `Process`).
# - iOS SDKs: arm64-apple-ios18.0; `CHILD_PROCESSES` off, as the package leaves it for iOS.
#
# Compiling Apple targets with this machine's toolchain needs three stand-ins, made afresh in the
# scratch folder (.build-apple/, which git ignores); none changes what the package's own code sees:
# - A resource folder for Darwin targets: the toolchain's own clang headers, Swift shims, API notes
#   and host macro plugins, without the Linux toolchain's copies of libdispatch's and os's headers,
#   which would hide the SDK's, and with a module map that lets the compiler find SwiftShims.
# - `libtool`: SwiftPM looks for Darwin's archiver before it builds for an Apple triple. Nothing is
#   archived when targets are built one by one (no product is linked), so the stand-in fails loudly
#   if anything calls it.
# - Swift Testing: Xcode carries Testing.framework in its platform folders, not in the SDK, so no
#   SDK copy has it. The stand-in is this toolchain's own Testing interface (the same Swift 6.3
#   release as Xcode 26.4's), compiled for the Apple target against the SDK; for iOS, its exit-test
#   API is marked unavailable, as Swift Testing marks it where a process can't be started. Test
#   macros expand with this toolchain's plugin, as Xcode's compiler expands them with its own.
# Code generation runs without the legacy type layouts an Apple toolchain carries for classes that
# deploy back to old Objective-C runtimes (-disable-legacy-type-info): they change nothing that is
# checked, and nothing built here is linked or run.
#
# SDKs from before Xcode 26 (the macOS 15 and iOS 18 SDKs) come with Swift 6.1's library, and this
# compiler says so ("this SDK is not supported by the compiler"): no Xcode pairs them with a compiler
# that builds this package, since Xcode 26.4 (Swift 6.3) is the oldest that does, and it compiles
# against its own 26.x SDKs with the package's deployment targets (macOS 15, iOS 18). They are still
# worth a look, for the package's own code: every module is built, but a module whose only errors
# are in a dependency's code (swift-argument-parser and GRDB take a Swift 6.2 compiler to mean a
# Swift 6.2 library) is listed as not built, and not counted as failed. And one diagnostic is not
# counted there: SDKs whose Swift library predates Swift 6.2 (the macOS 15 and iOS 18
# SDKs, from Xcode 16) don't mark pointer types unsafe, so every `@Test` expansion warns that its
# `unsafe` covers no unsafe operation ([no_unsafe_in_unsafe], in the macro's code, not ours). Xcode
# 26.4, the oldest that builds this package, compiles against its own 26.x SDKs, where the warning
# can't arise. On those older SDKs, test modules are built with warnings shown, and any other
# warning fails them.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/.." && pwd)"
[ $# -gt 0 ] || { echo "usage: bash Verification/apple-typecheck.sh SDK..." >&2; exit 2; }

scratch="$root/.build-apple"
mkdir -p "$scratch"
toolchain_lib="$(cd "$(dirname "$(command -v swiftc)")/../lib/swift" && pwd)"

# The Darwin resource folder.
resources="$scratch/resource-dir"
rm -rf "$resources"
mkdir -p "$resources"
for part in clang shims apinotes host migrator; do ln -s "$toolchain_lib/$part" "$resources/$part"; done
cat >"$resources/module.modulemap" <<'MAP'
extern module SwiftShims "shims/module.modulemap"
extern module _SwiftConcurrencyShims "shims/module.modulemap"
MAP

# The libtool stand-in.
tools="$scratch/bin"
mkdir -p "$tools"
printf '#!/bin/sh\necho "apple-typecheck: libtool was called ($*), but nothing may be archived here" >&2\nexit 1\n' \
    >"$tools/libtool"
chmod +x "$tools/libtool"

# Every target but the system library, dependencies first, from SwiftPM's own description.
targets=$(cd "$root" && swift package describe --type json 2>/dev/null | python3 -c '
import json, sys
targets = {t["name"]: t for t in json.load(sys.stdin)["targets"] if t["type"] != "system-target"}
done = []
def visit(name):
    if name in done or name not in targets:
        return
    for dependency in targets[name].get("target_dependencies") or []:
        visit(dependency)
    done.append(name)
for name in sorted(targets):
    visit(name)
print(" ".join(done))
')

# APPLE_TYPECHECK_TARGETS="A B": only these targets (and what they depend on), for a quicker look.
targets=${APPLE_TYPECHECK_TARGETS:-$targets}

# testing_stand_in FOLDER TRIPLE ARCH_FILE IOS: Swift Testing's interfaces, for TRIPLE.
testing_stand_in() {
    local folder=$1 triple=$2 file=$3 ios=$4 module
    rm -rf "$folder"
    for module in Testing _Testing_Foundation _TestingInterop; do
        mkdir -p "$folder/$module.swiftmodule"
        # On Linux, Foundation's value types live in FoundationEssentials; on Apple platforms, in
        # Foundation itself.
        sed -e "s/-target x86_64-unknown-linux-gnu/-target $triple/" -e 's/ -disable-objc-interop//' \
            -e 's/\bFoundationEssentials\./Foundation./g' \
            "$toolchain_lib/linux/$module.swiftmodule/x86_64-unknown-linux-gnu.swiftinterface" \
            >"$folder/$module.swiftmodule/$file.swiftinterface"
    done
    mkdir -p "$folder/Testing.swiftcrossimport"
    cp "$toolchain_lib/linux/Testing.swiftcrossimport/Foundation.swiftoverlay" "$folder/Testing.swiftcrossimport/"
    if [ "$ios" = 1 ]; then
        python3 - "$folder/Testing.swiftmodule/$file.swiftinterface" <<'PYTHON'
import re, sys
path = sys.argv[1]
lines = open(path).read().split("\n")
unavailable = '@available(*, unavailable, message: "Exit tests are not available on this platform.")'
# Every top-level declaration of the exit-test API (the types, their extensions, the macros and the
# functions they expand to), as Swift Testing declares them where there are none.
exit_test_api = re.compile(r"\bExitTest\b|\bExitStatus\b|processExitsWith")
declaration = re.compile(r"^(public |extension |@freestanding)")
marked = []
for line in lines:
    if declaration.match(line) and exit_test_api.search(line):
        marked.append(unavailable)
    marked.append(line)
if len(marked) - len(lines) < 6:
    sys.exit("the Testing interface changed: its exit-test API wasn't found")
open(path, "w").write("\n".join(marked))
PYTHON
    fi
}

failures=0
echo "| SDK | module | result |"
echo "|---|---|---|"
for sdk in "$@"; do
    sdk="$(cd "$sdk" && pwd)"
    read -r platform version < <(python3 -c '
import json, sys
settings = json.load(open(sys.argv[1] + "/SDKSettings.json"))
print(settings["CanonicalName"].rstrip("0123456789."), settings["Version"])' "$sdk")
    case "$platform" in
        macosx) triple=arm64-apple-macosx15.0 interface=arm64-apple-macos ios=0 name="macOS $version" ;;
        iphoneos) triple=arm64-apple-ios18.0 interface=arm64-apple-ios ios=1 name="iOS $version" ;;
        *) echo "$sdk: not a macOS or iOS SDK ($platform)" >&2; exit 2 ;;
    esac
    # Whether the SDK's Swift library predates Swift 6.2 (see the top of this file).
    old_swift=$(sed -n 's/^\/\/ swift-compiler-version: .*(swiftlang-\([0-9]*\)\.\([0-9]*\).*/\1 \2/p' \
        "$sdk"/usr/lib/swift/Swift.swiftmodule/*.swiftinterface | head -n 1 | awk '{ print ($1 * 100 + $2 < 602) }')
    build="$scratch/$platform$version"
    rm -rf "$build"
    testing="$build-testing"
    testing_stand_in "$testing" "$triple" "$interface" "$ios"
    for target in $targets; do
        flags=(--scratch-path "$build" --triple "$triple" --sdk "$sdk"
            -Xswiftc -resource-dir -Xswiftc "$resources" -Xswiftc -I -Xswiftc "$testing"
            -Xswiftc -Xfrontend -Xswiftc -disable-legacy-type-info --target "$target")
        tested=0
        grep -rqs "^import Testing" "$root/Sources/$target" "$root/Tests/$target" && tested=1
        if [ "$old_swift" = 1 ] && [ "$tested" = 1 ]; then
            flags+=(-Xswiftc -Xfrontend -Xswiftc -debug-diagnostic-names)
        else
            flags+=(-Xswiftc -warnings-as-errors)
        fi
        log="$build-$target.log"
        status=0
        (cd "$root" && PATH="$tools:$PATH" swift build "${flags[@]}") >"$log" 2>&1 || status=$?
        # Diagnostics start their line (the lines of a snippet under one start with a space or a bar);
        # the macro expansions' own carry no path.
        warnings=$(grep -E "^[^ |].*: warning: " "$log" | grep -v "\[no_unsafe_in_unsafe\]$" | sort -u || true)
        errors=$(grep -E "^[^ |].*: error: " "$log" | sort -u || true)
        if [ "$status" -eq 0 ] && [ -z "$warnings" ]; then
            echo "| $name | $target | clean |"
        elif [ "$old_swift" = 1 ] && [ -n "$errors" ] && ! grep -qv "^$build/checkouts/" <<<"$errors"; then
            # Only a dependency failed, on an SDK older than the compiler (see the top of this file).
            echo "| $name | $target | not built: a dependency needs an SDK of Swift 6.2 or later |"
            head -n 1 <<<"$errors" | sed 's/^/    /'
        else
            echo "| $name | $target | FAILED |"
            if [ -n "$errors$warnings" ]; then
                printf '%s\n%s\n' "$errors" "$warnings" | sed '/^$/d' | head -n 20 | sed 's/^/    /'
            else
                tail -n 20 "$log" | sed 's/^/    /'
            fi
            failures=$((failures + 1))
        fi
    done
done

if [ "$failures" -ne 0 ]; then
    echo "$failures module(s) failed" >&2
    exit 1
fi

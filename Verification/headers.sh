#!/usr/bin/env bash
# Compiles the package's C files where `swift build` here never sends them: against libxml2 versions
# other than this machine's, and for Apple platforms. Warnings are errors. See README.md here.
#
# - Sources/DocumentsXML/*.c against libxml2 2.9 (this machine's, and the line Apple's SDKs ship), 2.12 (whose
#   error handler takes a `const xmlError *`) and 2.14 (which deprecates what the parser used): the
#   newer headers come from PyPI's lxml wheels, which carry the libxml2 they bundle.
# - Every C file of the package for arm64-apple-macos15, x86_64-apple-macos15 and arm64-apple-ios18,
#   with `__APPLE__` defined, against apple-sdk/ (the declarations the C uses, from Apple's
#   documentation) and clang's own headers: every Apple-only branch is parsed and type-checked.
#   With modules on, as SwiftPM compiles C for Apple platforms. libxml2 sits where Apple's SDKs keep
#   it (usr/include/libxml, with usr/include/libxml2/libxml leading there), built as Apple builds it
#   as far as the C can tell (its legacy API on), under a module map shaped as the SDKs' is
#   (apple-sdk/usr/include/libxml): this machine's libxml2 2.9 headers, the line Apple ships.
#   Verification/apple-typecheck.sh compiles the same files against real SDKs, by hand.
#
# Usage: bash Verification/headers.sh   (downloads the two lxml wheels with pip if needed)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$here/.."
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
clang=$(command -v clang)
failures=0

check() {
    local name=$1
    shift
    if "$clang" -fsyntax-only -Wall -Wextra -Werror "$@" 2>"$work/errors"; then
        printf '| %s | ok |\n' "$name"
    else
        printf '| %s | FAILED |\n' "$name"
        sed 's/^/    /' "$work/errors"
        failures=$((failures + 1))
    fi
}

# libxml2's headers from an lxml wheel: lxml/includes/libxml.
libxml_from_lxml() {
    local version=$1 folder="$work/lxml-$1"
    mkdir -p "$folder"
    pip download -q --no-deps --only-binary=:all: --dest "$folder" "lxml==$version" >/dev/null
    (cd "$folder" && python3 -m zipfile -e lxml-*.whl . >/dev/null)
    echo "$folder/lxml/includes"
}

echo "| compiled | result |"
echo "|---|---|"
xml=(-I "$root/Sources/DocumentsXML/include" "$root"/Sources/DocumentsXML/*.c)
check "DocumentsXML/*.c, libxml2 $(pkg-config --modversion libxml-2.0) (this machine's)" \
    $(pkg-config --cflags libxml-2.0) "${xml[@]}"
for lxml in 5.3.0 6.1.3; do
    includes=$(libxml_from_lxml "$lxml")
    libxml=$(sed -n 's/^#define LIBXML_DOTTED_VERSION "\(.*\)"/\1/p' "$includes/libxml/xmlversion.h")
    check "DocumentsXML/*.c, libxml2 $libxml (lxml $lxml)" -I "$includes" "${xml[@]}"
done

# The Apple stand-in with libxml2 in the SDK's layout: this machine's headers, but built without
# ICU (its headers aren't here; Apple's libxml2 headers don't include them either).
sysroot="$work/apple-sdk"
cp -R "$here/apple-sdk" "$sysroot"
cp "$(pkg-config --variable=includedir libxml-2.0)"/libxml2/libxml/*.h "$sysroot/usr/include/libxml/"
python3 - "$sysroot/usr/include/libxml/xmlversion.h" <<'PYTHON'
import sys
path = sys.argv[1]
text = open(path).read()
if "#if 1\n#define LIBXML_ICU_ENABLED" not in text or "#define LIBXML_LEGACY_ENABLED" not in text:
    sys.exit("xmlversion.h changed: no ICU to turn off, or no legacy API")
open(path, "w").write(text.replace("#if 1\n#define LIBXML_ICU_ENABLED", "#if 0\n#define LIBXML_ICU_ENABLED"))
PYTHON
mkdir -p "$sysroot/usr/include/libxml2"
ln -s ../libxml "$sysroot/usr/include/libxml2/libxml"

# Every C file, for Apple targets.
for target in arm64-apple-macos15 x86_64-apple-macos15 arm64-apple-ios18; do
    apple=(-target "$target" -ffreestanding -isysroot "$sysroot" -fmodules -fmodules-cache-path="$work/modules")
    for file in "$root"/Sources/ExclusionShims/*.c; do
        check "$(basename "$file"), $target" "${apple[@]}" -I "$root/Sources/ExclusionShims/include" "$file"
    done
    for file in "$root"/Sources/DocumentsXML/*.c; do
        check "DocumentsXML/$(basename "$file"), $target" "${apple[@]}" -I "$root/Sources/DocumentsXML/include" "$file"
    done
    check "CToolSupport.c, $target" "${apple[@]}" -I "$root/Sources/CToolSupport/include" \
        "$root/Sources/CToolSupport/CToolSupport.c"
    check "ExclusionLockTesting.c, $target" "${apple[@]}" -I "$root/Sources/ExclusionShims/include" \
        -I "$root/Tests/ExclusionLockTesting/include" "$root/Tests/ExclusionLockTesting/ExclusionLockTesting.c"
done

# The check must be able to fail. planted WHAT FILE EDIT FLAGS...: a copy of FILE compiles for
# arm64-apple-ios18, and the same copy with the sed EDIT made must not.
planted() {
    local what=$1 file=$2 edit=$3 copy
    copy="$work/planted-$(basename "$file")"
    shift 3
    local compile=("$clang" -fsyntax-only -target arm64-apple-ios18 -ffreestanding -isysroot "$sysroot" -fmodules
        -fmodules-cache-path="$work/modules" -I "$(dirname "$file")" "$@" "$copy")
    cp "$file" "$copy"
    if ! "${compile[@]}" 2>/dev/null; then
        echo "| planted: $what | the copy without the plant doesn't compile |"
        failures=$((failures + 1))
        return
    fi
    sed "$edit" "$file" >"$copy"
    if ! cmp -s "$copy" "$file" && ! "${compile[@]}" 2>/dev/null; then
        echo "| planted: $what | caught, as it must be |"
    else
        echo "| planted: $what | NOT CAUGHT |"
        failures=$((failures + 1))
    fi
}
planted "an Apple-only call with an argument missing" "$root/Sources/ExclusionShims/ExclusionPlatform.c" \
    's/os_sync_wake_by_address_any(word, sizeof \*word, OS_SYNC_WAKE_BY_ADDRESS_NONE)/os_sync_wake_by_address_any(word, sizeof *word)/' \
    -I "$root/Sources/ExclusionShims/include"
planted "a callback named as one of libxml2's legacy functions" "$root/Sources/DocumentsXML/DocumentsXML.c" \
    's/\bcharacter_data\b/characters/g' -I "$root/Sources/DocumentsXML/include"

if [ "$failures" -ne 0 ]; then
    echo "$failures file(s) did not compile" >&2
    exit 1
fi

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

# Every C file, for Apple targets. libxml2's headers are lxml 5.3.0's: this machine's are built
# with ICU, whose headers aren't here.
for target in arm64-apple-macos15 x86_64-apple-macos15 arm64-apple-ios18; do
    apple=(-target "$target" -ffreestanding -isysroot "$here/apple-sdk")
    for file in "$root"/Sources/ExclusionShims/*.c; do
        check "$(basename "$file"), $target" "${apple[@]}" -I "$root/Sources/ExclusionShims/include" "$file"
    done
    check "DocumentsXML/*.c, $target" "${apple[@]}" -I "$work/lxml-5.3.0/lxml/includes" "${xml[@]}"
    check "CToolSupport.c, $target" "${apple[@]}" -I "$root/Sources/CToolSupport/include" \
        "$root/Sources/CToolSupport/CToolSupport.c"
    check "ExclusionLockTesting.c, $target" "${apple[@]}" -I "$root/Sources/ExclusionShims/include" \
        -I "$root/Tests/ExclusionLockTesting/include" "$root/Tests/ExclusionLockTesting/ExclusionLockTesting.c"
done

# The check must be able to fail: an Apple-only call with an argument missing, planted in a copy.
sed 's/os_sync_wake_by_address_any(word, sizeof \*word, OS_SYNC_WAKE_BY_ADDRESS_NONE)/os_sync_wake_by_address_any(word, sizeof *word)/' \
    "$root/Sources/ExclusionShims/ExclusionPlatform.c" >"$work/planted.c"
if cmp -s "$work/planted.c" "$root/Sources/ExclusionShims/ExclusionPlatform.c" \
    || "$clang" -fsyntax-only -target arm64-apple-macos15 -ffreestanding -isysroot "$here/apple-sdk" \
        -I "$root/Sources/ExclusionShims/include" "$work/planted.c" 2>/dev/null; then
    echo "| a planted wrong call, arm64-apple-macos15 | NOT CAUGHT |"
    failures=$((failures + 1))
else
    echo "| a planted wrong call, arm64-apple-macos15 | caught, as it must be |"
fi

if [ "$failures" -ne 0 ]; then
    echo "$failures file(s) did not compile" >&2
    exit 1
fi

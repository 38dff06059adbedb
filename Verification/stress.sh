#!/usr/bin/env bash
# Builds Verification/stress.c against the real lock, as shipped and with each planted bug, and
# checks what each must find: no lost wake-up in the lock as shipped (with membarrier and in the
# symmetric protocol), at least one with the fence planted away or with the symmetric release
# planted as a plain store. See README.md here. Linux on x86-64 (elsewhere only the symmetric
# protocol exists, and only its half runs).
#
# Usage: bash Verification/stress.sh [ROUNDS]   (default 200,000 for the lock as shipped)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
shims="$here/../Sources/ExclusionShims"
rounds=${1:-200000}
cc=$(command -v cc || command -v gcc || command -v clang)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

build() {
    local name=$1
    shift
    "$cc" -O2 -pthread -I "$shims/include" "$@" -o "$work/$name" \
        "$here/stress.c" "$shims/ExclusionLock.c" "$shims/ExclusionShims.c" "$shims/ExclusionPlatform.c"
}
build shipped
build no-fence -include "$here/plants/no-fence.h"
build plain-store-release -include "$here/plants/plain-store-release.h"

failures=0
# run BINARY EXPECTED [--fallback]: EXPECTED is "none" or "some" lost wake-ups. The lock as shipped
# runs all its rounds, or a minute and a half on a machine so busy that they take longer; a planted bug
# runs until its first lost wake-up, for up to four minutes.
run() {
    local binary=$1 expected=$2
    local -a mode=("${@:3}")
    local output lost
    if [ "$expected" = some ]; then
        output=$("$work/$binary" "${mode[@]}" --until-lost --seconds 240 "$rounds")
    else
        output=$("$work/$binary" "${mode[@]}" --seconds 90 "$rounds")
    fi
    lost=$(sed -n 's/.*lost wake-ups \([0-9]*\).*/\1/p' <<<"$output")
    local verdict=ok
    if { [ "$expected" = none ] && [ "$lost" != 0 ]; } || { [ "$expected" = some ] && [ "$lost" = 0 ]; }; then
        verdict="WRONG (expected $expected)"
        failures=$((failures + 1))
    fi
    printf '| %s | %s | %s |\n' "$binary" "$output" "$verdict"
}

echo "| build | result | verdict |"
echo "|---|---|---|"
if "$work/shipped" 1 | grep -q "protocol fenced"; then
    run shipped none
    run no-fence some
else
    echo "| shipped | membarrier is not used on this machine: the fenced protocol is not tested | skipped |"
fi
run shipped none --fallback
run plain-store-release some --fallback
if [ "$failures" -ne 0 ]; then
    echo "$failures run(s) did not come out as expected" >&2
    exit 1
fi

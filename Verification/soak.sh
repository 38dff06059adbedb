#!/usr/bin/env bash
# Runs the whole test suite again and again beside busy loops, in each configuration .ci/run builds
# (default, portable, iOS's set, ThreadSanitizer), and prints each run's failures: a test that
# passes only on a quiet machine shows here. See README.md here ("Under load").
#
# Usage: bash Verification/soak.sh [RUNS] [BUSY] [CONFIGURATION...]
#   RUNS            runs of each configuration (default 5); ThreadSanitizer runs once whatever it is
#   BUSY            busy loops beside the tests, each a shell loop that only spins (default 4)
#   CONFIGURATION   any of default, portable, ios, tsan (default: all four)
#
# Each configuration is built before the loops start, so that only the tests run under load. The
# logs stay in .build-soak/ (one per run); the exit status is the number of runs that failed.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
busy=${2:-4}
shift $(($# < 2 ? $# : 2))
configurations=("$@")
[ ${#configurations[@]} -gt 0 ] || configurations=(default portable ios tsan)
logs=.build-soak
mkdir -p "$logs"

portable=(-Xswiftc -DEXCLUSION_PORTABLE_LOCK -Xcc -DEXCLUSION_PORTABLE_LOCK)
# arguments CONFIGURATION: what `swift build` and `swift test` take for it, as .ci/run gives them.
arguments() {
    case $1 in
        default) echo "" ;;
        portable) echo "--scratch-path .build-portable ${portable[*]}" ;;
        ios) echo "--scratch-path .build-ios ${portable[*]}" ;;
        tsan) echo "--sanitize=thread --scratch-path .build-tsan" ;;
        *)
            echo "unknown configuration '$1' (default, portable, ios, tsan)" >&2
            exit 2
            ;;
    esac
}
# environment CONFIGURATION: the variables .ci/run sets for it.
environment() {
    case $1 in
        ios) echo "EXCLUSION_NO_CHILD_PROCESSES=1" ;;
        tsan) echo "EXCLUSION_TEST_PATIENCE=6 TSAN_OPTIONS=halt_on_error=1:suppressions=$PWD/.ci/tsan-suppressions.txt" ;;
        *) echo "" ;;
    esac
}

for configuration in "${configurations[@]}"; do
    # shellcheck disable=SC2046 # the arguments and variables are words, as .ci/run writes them
    env $(environment "$configuration") timeout 1500 swift build --build-tests $(arguments "$configuration") \
        >"$logs/build-$configuration.log" 2>&1 || {
        echo "$configuration: the build failed (see $logs/build-$configuration.log)" >&2
        exit 1
    }
done

loops=()
# shellcheck disable=SC2317 # called by the trap
stop_loops() { [ ${#loops[@]} -eq 0 ] || kill "${loops[@]}" 2>/dev/null || true; }
trap stop_loops EXIT
for _ in $(seq "$busy"); do
    sh -c 'while :; do :; done' &
    loops+=($!)
done
echo "$busy busy loops beside the tests, on $(nproc) cores; $runs runs of each configuration"

failed=0
for configuration in "${configurations[@]}"; do
    times=$runs
    [ "$configuration" != tsan ] || times=1
    green=0
    for run in $(seq "$times"); do
        log="$logs/$configuration-$run.log"
        start=$(date +%s)
        # shellcheck disable=SC2046
        if env $(environment "$configuration") timeout 2400 swift test --skip-build $(arguments "$configuration") >"$log" 2>&1; then
            status=0
        else
            status=$?
        fi
        seconds=$(($(date +%s) - start))
        # Swift Testing marks a failing test's issues and its end with ✘; a crash or a sanitizer's
        # report ends the run without them, so the log's last lines are shown instead. (Not every
        # "Fatal error" line: ScheduleExplorer's tests trap on purpose, and go on.)
        issues=$(grep -aE '✘ Test .*(recorded an issue|failed)|error: .*failed|ThreadSanitizer: ' "$log" |
            grep -avE '^✘ Test run with' | sed -E 's/^/    /' | cut -c1-400 || true)
        if [ "$status" -eq 0 ]; then
            green=$((green + 1))
            printf '%s %d/%d: green in %d s\n' "$configuration" "$run" "$times" "$seconds"
        else
            failed=$((failed + 1))
            printf '%s %d/%d: FAILED (status %d) in %d s, %s\n' "$configuration" "$run" "$times" "$status" \
                "$seconds" "$log"
            if [ -n "$issues" ]; then echo "$issues"; else tail -n 15 "$log" | sed -E 's/^/    /'; fi
        fi
    done
    printf '%s: %d of %d green beside %d busy loops\n' "$configuration" "$green" "$times" "$busy"
done
exit "$failed"

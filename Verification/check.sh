#!/usr/bin/env bash
# Model-checks the lock protocols with Spin: each protocol as written must pass (no assertion
# violated, no invalid end state, the whole state space searched), and each broken variant must
# fail. See README.md here. Needs spin and a C compiler (`apt-get install -y spin`).
#
# Usage: bash Verification/check.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
command -v spin >/dev/null || { echo "spin is not installed (apt-get install -y spin)" >&2; exit 1; }
cc=$(command -v cc || command -v gcc || command -v clang)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
failures=0

# check MODEL EXPECTED [DEFINES...]: EXPECTED is "holds" or "fails".
check() {
    local model=$1 expected=$2
    shift 2
    local name="${*:-as written}"
    local flags=()
    for define in "$@"; do flags+=("-D$define"); done
    rm -rf "${work:?}"/*
    (cd "$work" && spin "${flags[@]}" -a "$here/$model" >/dev/null)
    "$cc" -w -O2 -DSAFETY -DCOLLAPSE -o "$work/pan" "$work/pan.c"
    local started=$SECONDS output errors states outcome
    output=$(cd "$work" && ./pan -m4000 2>&1)
    errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' <<<"$output")
    states=$(sed -n 's/^ *\([0-9]*\) states, stored.*/\1/p' <<<"$output")
    if grep -q "max search depth too small" <<<"$output"; then
        outcome="incomplete (search depth)"
    elif [ "$errors" = 0 ]; then
        outcome="holds"
    else
        outcome="fails: $(grep -m1 -o 'pan:1: [a-z ]*[a-z]' <<<"$output" | sed 's/pan:1: //')"
    fi
    local verdict=ok
    if [ "${outcome%%:*}" != "$expected" ]; then
        verdict="WRONG (expected: $expected)"
        failures=$((failures + 1))
    fi
    printf '| %s | %s | %s | %s | %s s | %s |\n' "$model" "$name" "$outcome" "$states" "$((SECONDS - started))" "$verdict"
}

echo "| model | configuration | outcome | states | time | verdict |"
echo "|---|---|---|---:|---:|---|"
check lock.pml holds MEMBARRIER_CAN_FAIL
check lock.pml holds FALLBACK
check lock.pml fails NO_MEMBARRIER
check lock.pml fails NO_COMPILER_FENCE
check lock.pml fails NO_RELEASE_FENCE
check lock.pml fails RELEASE_IGNORES_EPISODE
check lock.pml fails NO_CLEAR_BEFORE_LOOK
check lock.pml fails CLEAR_ON_EXIT
check lock.pml fails SLEEP_ON_COUNTER
check lock.pml fails FALLBACK PLAIN_STORE_FALLBACK
check lock.pml fails MEMBARRIER_CAN_FAIL NO_FENCE_WHILE_COUNTED
check bias.pml holds
check bias.pml holds COLLIDE
check bias.pml fails READER_NO_RECHECK
check bias.pml fails READER_PLAIN_ANNOUNCE
check bias.pml fails WRITER_PLAIN_REVOKE
check bias.pml fails WRITER_IGNORES_ANNOUNCING
check bias.pml fails COLLIDE READER_CLEARS_TAKEN_SLOT
check bias.pml fails LIMIT_BEFORE_WITHDRAW
check fenced-readers.pml holds
check fenced-readers.pml fails NO_MEMBARRIER
check fenced-readers.pml fails READER_DOES_NOT_LOOK
check fenced-readers.pml fails LOOK_BEFORE_STORE
check fenced-readers.pml fails FENCE_BEFORE_WAITING
check fenced-readers.pml fails NO_FENCE_BEFORE_WAKE
check owned-lock.pml holds
check owned-lock.pml fails PLAIN_STORE_UNLOCK
check owned-lock.pml fails READ_TIMED_BEFORE_UNLOCK
check owned-lock.pml fails COUNT_AFTER_TRY
check owned-lock.pml fails NO_CLEAR_BEFORE_TRY
check owned-lock.pml fails CLEAR_ON_EXIT
check owned-lock.pml fails LEAVE_WITHOUT_TRY
check owned-readers.pml holds
check owned-readers.pml fails READER_LEAVES_WITH_STORE
check owned-readers.pml fails READER_OVERWRITES_MARK
check owned-readers.pml fails WRITER_SLEEPS_UNMARKED
check owned-readers.pml fails LAST_READER_DOES_NOT_WAKE
check owned-readers.pml fails WRITER_SKIPS_SLOW_READERS
check grant.pml holds
check grant.pml fails WAKE_BEFORE_COUNT
check grant.pml fails COUNT_BEFORE_CLEAR
check grant.pml fails PROMISE_READ_FIRST
check grant.pml fails NO_PROMISE_CHECK
check grant.pml fails PARKED_READ_FIRST
check grant.pml fails PARKED_AFTER_LOOK
check woken.pml holds
check woken.pml fails WAKE_READS_FIRST
check woken.pml fails PLAIN_PARK_MARK
check woken.pml fails SPIN_ENDS_WOKEN
check woken.pml fails SPIN_REARMS
check side.pml holds
check side.pml holds RETIRE_IGNORES_JOBS
check side.pml fails NO_ANNOUNCE
check side.pml fails IGNORE_RETIRING
check side.pml fails FAST_PATH_IGNORES_RETIRING
check side.pml fails KEPT_LOOK_IGNORES_RETIRING
check side.pml fails RETIRE_WITHOUT_STATE
check side.pml fails KEPT_WITHOUT_RETIRING_WAIT
check side.pml fails DRAIN_DROPS_ANNOUNCEMENT
check side.pml fails DELIVERY_UNANNOUNCED
check side.pml fails BUSY_DRAIN_RETIRES_ANYWAY
if [ "$failures" -ne 0 ]; then
    echo "$failures configuration(s) did not come out as expected" >&2
    exit 1
fi

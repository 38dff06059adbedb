#!/usr/bin/env bash
# Reads the bank's contention profile with a real pprof reader, Go's (`go tool pprof`), and checks
# what it reads: the sample types, the ledger's label and type, the call sites in Banking, and that
# every instance's waits and total wait are those the tool's own table printed. Then it breaks
# copies of the profile (Verification/pprof-check.py names each) and checks that every one fails:
# refused by Go's reader, or caught by the checks. The tests decode profiles with the project's
# own decoder; this is the check that doesn't share its author's assumptions.
#
# Usage: bash Verification/pprof-check.sh
#   Go comes from Debian's packages (golang-go) when `go` is missing; python3 must be there.
#   PPROF_CHECK_BANK=path/to/bank uses that tool instead of building the release one.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

if ! command -v go >/dev/null; then
    echo "installing Go from Debian's packages (golang-go)"
    apt-get update -qq && apt-get install -y -qq golang-go >/dev/null
fi
bank=${PPROF_CHECK_BANK:-}
if [[ -z $bank ]]; then
    swift build -c release --product bank
    bank="$(swift build -c release --show-bin-path)/bank"
fi
[[ -x $bank ]] || { echo "no bank tool at $bank" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
check=(python3 Verification/pprof-check.py)

# More threads than cores, so the ledger is contended however fast the machine; more again if a
# run was so lucky that nobody waited for it.
profile="$work/bank.pb.gz"
for threads in 8 16 32; do
    "$bank" simulate --threads "$threads" --operations 1000000 --contention-profile "$profile" \
        >"$work/report.txt" 2>"$work/table.txt"
    [[ $(awk '/^"bank ledger" / { print $4 }' "$work/table.txt") -gt 0 ]] && break
done
echo "profile of bank simulate --threads $threads --operations 1000000: $(wc -c <"$profile") bytes"
grep -v '^progress: ' "$work/table.txt"

failures=0

# The profile as written: Go's reader must read it, and what it reads must pass every check.
if ! go tool pprof -raw "$profile" >"$work/raw.txt" 2>"$work/raw-errors.txt"; then
    echo "FAILED: go tool pprof -raw refused the profile:"
    cat "$work/raw-errors.txt"
    failures=$((failures + 1))
elif ! "${check[@]}" check "$work/raw.txt" "$work/table.txt"; then
    echo "FAILED: what go tool pprof -raw read (above) doesn't pass the checks"
    failures=$((failures + 1))
fi
# The view people read first: the delay, holders ranked, and the ledger and its waiting sites.
if ! go tool pprof -top "$profile" >"$work/top.txt" 2>"$work/top-errors.txt" ||
    ! grep -q '^Type: delay$' "$work/top.txt" ||
    ! grep -q '"bank ledger"$' "$work/top.txt" ||
    ! grep -q 'waited at Banking/Bank\.swift:[0-9]*$' "$work/top.txt"; then
    echo "FAILED: go tool pprof -top doesn't show the delay, the ledger and a waiting site in Bank.swift:"
    cat "$work/top.txt" "$work/top-errors.txt"
    failures=$((failures + 1))
else
    echo "ok: go tool pprof -top ranks the holders of \"bank ledger\" by delay"
fi

# The check allows the table's rounding, and no more: a total two units of its last digit off fails.
"${check[@]}" misprint "$work/table.txt" "$work/misprinted.txt"
if [[ ! -s $work/raw.txt ]] || cmp -s "$work/table.txt" "$work/misprinted.txt"; then
    echo "FAILED: no misprinted table to check"
    failures=$((failures + 1))
elif problems=$("${check[@]}" check "$work/raw.txt" "$work/misprinted.txt"); then
    echo "FAILED: misprinted-total: the table's ledger total, two units of its last digit off, passed"
    failures=$((failures + 1))
else
    echo "ok: misprinted-total: caught: $(head -1 <<<"$problems" | sed 's/^problem: //')"
fi

# Each broken copy must fail: Go's reader refuses it, or what it reads fails a check.
mkdir "$work/broken"
variants=$("${check[@]}" break "$profile" "$work/broken")
for variant in $variants; do
    file="$work/broken/$variant.pb.gz"
    if ! go tool pprof -raw "$file" >"$work/broken/$variant.raw" 2>"$work/broken/$variant.errors"; then
        echo "ok: $variant: Go's reader refuses it: $(grep -v 'failed to fetch any source profiles' \
            "$work/broken/$variant.errors" | head -1 | sed "s|$file: ||")"
    elif problems=$("${check[@]}" check "$work/broken/$variant.raw" "$work/table.txt"); then
        echo "FAILED: $variant: read and passed every check"
        failures=$((failures + 1))
    else
        echo "ok: $variant: read, and caught: $(head -1 <<<"$problems" | sed 's/^problem: //')"
    fi
done
if [[ $(wc -w <<<"$variants") -lt 11 ]]; then
    echo "FAILED: expected 11 broken variants, got: $variants"
    failures=$((failures + 1))
fi

echo "pprof check: $failures failure(s), $(($(date +%s) - started)) s"
[[ $failures -eq 0 ]]

#!/usr/bin/env bash
# Builds the parsers' fuzz target with libFuzzer and AddressSanitizer, then fuzzes for SECONDS
# (default 60) from a copy of Fuzz/corpus. New inputs it finds are left in NEW_INPUTS (default: a
# temporary folder) for `-merge=1` into the corpus; a crash leaves crash-* in the current folder
# and fails the run.
#
# Usage: bash Fuzz/fuzz.sh [SECONDS] [NEW_INPUTS]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
new_inputs=${2:-$(mktemp -d)}

# SwiftPM gives every executable a main of its own, so libFuzzer comes in without its main
# (fuzzer_no_main) and the target calls LLVMFuzzerRunDriver itself.
runtime=$(ls "$(dirname "$(readlink -f "$(command -v swiftc)")")"/../lib/clang/*/lib/linux/libclang_rt.fuzzer_no_main-x86_64.a | head -1)
log=$(mktemp)
# The linker warns about every AddressSanitizer helper it can't export; those lines are noise.
if ! swift build --scratch-path .build-fuzz --product DocumentsFuzzer \
    -Xswiftc -DFUZZING -Xswiftc -sanitize=address \
    -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp \
    -Xcc -fsanitize=fuzzer-no-link,address \
    -Xlinker "$runtime" -Xlinker -lstdc++ >"$log" 2>&1; then
    grep -v "Cannot export local symbol" "$log"
    exit 1
fi
grep -v "Cannot export local symbol" "$log" | tail -3
binary=.build-fuzz/debug/DocumentsFuzzer

mkdir -p "$new_inputs"
cp Fuzz/corpus/* "$new_inputs"/
# -timeout: one input may take at most 10 s (a hang fails); -rss_limit_mb: an input may not make
# the parsers use more than 2 GiB (an entity bomb that got through would).
ASAN_OPTIONS=detect_leaks=1 "$binary" "$new_inputs" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 2>&1 | tail -25
echo "fuzzed for $seconds s; inputs in $new_inputs"

#!/usr/bin/env python3
"""Runs the benchmarks once and prints README's table: each Exclusion operation as a ratio to its
peers measured in the same run (medians of the wall-clock time per operation).

Usage, from this folder: python3 ratios.py [--runs N] [extra arguments for `swift package benchmark`]

This machine's two vCPUs are noisy (a run can be 50 % slower than the one before), so by default
the benchmarks run three times; each row shows the median over the runs of the per-run median
times, and the median of the per-run ratios.
"""
import statistics
import subprocess
import sys

# (what, ours, peer, how to compare, target): "time" ratios are ours/peer (lower is better);
# "speedup" ratios are peer/ours (higher is better).
ROWS = [
    ("`access`, uncontended, vs NSLock", "Exclusive.access", "peer: NSLock", "time", "≤ 1.5×"),
    ("`access`, uncontended, vs Mutex", "Exclusive.access", "peer: Mutex", "time", "—"),
    ("`access` speed-up over `DispatchQueue.sync`", "Exclusive.access", "peer: DispatchQueue.sync", "speedup", "≥ 5×"),
    ("`access`, 2 threads, vs NSLock", "Exclusive.access, 2 threads", "peer: NSLock, 2 threads", "time", "≤ 2×"),
    ("`access` speed-up over `DispatchQueue.sync`, 2 threads", "Exclusive.access, 2 threads",
     "peer: DispatchQueue.sync, 2 threads", "speedup", "—"),
    ("`access`, 2 threads, 0.1 µs of work inside and out, vs NSLock (µs per 10,000)",
     "Exclusive.access, 2 threads, 0.1 µs inside and out (µs per 10,000)",
     "peer: NSLock, 2 threads, 0.1 µs inside and out (µs per 10,000)", "time", "—"),
    ("`access`, 4 threads, 1 µs of work inside, vs NSLock (µs per 10,000)",
     "Exclusive.access, 4 threads, 1 µs inside (µs per 10,000)",
     "peer: NSLock, 4 threads, 1 µs inside (µs per 10,000)", "time", "—"),
    ("`read`, uncontended, vs pthread_rwlock", "ReadersWriter.read", "peer: pthread_rwlock read", "time", "≤ 1.5×"),
    ("`read` throughput, 2 threads over 1", "ReadersWriter.read, 2 threads", "ReadersWriter.read", "speedup", "≥ 1.6×"),
    ("pthread_rwlock read throughput, 2 threads over 1", "peer: pthread_rwlock read, 2 threads",
     "peer: pthread_rwlock read", "speedup", "—"),
    ("`read` speed-up over concurrent `DispatchQueue.sync`", "ReadersWriter.read",
     "peer: concurrent DispatchQueue.sync read", "speedup", "—"),
    ("`write` speed-up over barrier `sync`", "ReadersWriter.write",
     "peer: concurrent DispatchQueue barrier sync", "speedup", "—"),
    ("`accessAsync` per block vs `DispatchQueue.async`", "Exclusive.accessAsync, submit all then wait",
     "peer: DispatchQueue.async, submit all then wait", "time", "≤ 0.5×"),
    ("`access` nested in another vs NSLock nested (lock-order check off)", "Exclusive.access nested in another",
     "peer: NSLock nested in another", "time", "—"),
    ("`await access` vs actor method call", "await Exclusive.access", "peer: actor method call", "time", "≤ 1.0×"),
    ("`access` with one `values` consumer (until it has the last value) vs with none",
     "Exclusive.access, one values consumer", "Exclusive.access", "time", "≤ 2×"),
    ("`access` with one `values` consumer: speed-up over a `Mutex` yielding into an `AsyncStream` (newest 1)",
     "Exclusive.access, one values consumer", "peer: Mutex and AsyncStream (newest 1), one consumer",
     "speedup", "≥ 10×"),
    ("`access` with a contention profile running (`.all`), uncontended, vs none", "Exclusive.access, profiled",
     "Exclusive.access", "time", "≤ 1.05×"),
    ("The same, 2 threads, as separate rows (noisy, see PAIRED)", "Exclusive.access, 2 threads, profiled",
     "Exclusive.access, 2 threads", "time", "—"),
    ("The same, 4 threads, 1 µs inside, as separate rows (µs per 10,000; noisy, see PAIRED)",
     "contention: Exclusive.access, 4 threads, 1 µs inside, profiled",
     "contention: Exclusive.access, 4 threads, 1 µs inside", "time", "—"),
    ("The same, 8 threads, 0.1 µs inside and out, as separate rows (µs per 10,000; noisy, see PAIRED)",
     "contention: Exclusive.access, 8 threads, 0.1 µs inside and out, profiled",
     "contention: Exclusive.access, 8 threads, 0.1 µs inside and out", "time", "—"),
    ("Bounded queue (64 slots), 100,000 items, 1 producer (ms): `access(when:)` speed-up over NSCondition",
     "bounded queue, Exclusive.access(when:), 1 producer", "peer: bounded queue, NSCondition, 1 producer",
     "speedup", "≥ 1.0×"),
    ("The same, 2 producers (ms)",
     "bounded queue, Exclusive.access(when:), 2 producers", "peer: bounded queue, NSCondition, 2 producers",
     "speedup", "≥ 1.0×"),
    ("Bounded queue, 1 producer: speed-up over two `DispatchSemaphore`s and a lock (ms)",
     "bounded queue, Exclusive.access(when:), 1 producer", "peer: bounded queue, DispatchSemaphore, 1 producer",
     "speedup", "—"),
    ("The same, 2 producers (ms)",
     "bounded queue, Exclusive.access(when:), 2 producers", "peer: bounded queue, DispatchSemaphore, 2 producers",
     "speedup", "—"),
    ("Median wake-up of a sleeping waiter (200 µs after it began to wait), the change that satisfies it → its body starts, vs NSCondition signal → wake",
     "wake-up when asleep, Exclusive.access(when:)", "peer: wake-up when asleep, NSCondition", "time", "≤ 2×"),
    ("The same, the change coming as soon as the waiter began to wait", "wake-up, Exclusive.access(when:)",
     "peer: wake-up, NSCondition", "time", "—"),
    ("Bank transfer, batched notifications (until delivered), speed-up over textbook",
     "Bank transfer, batched notifications", "peer: textbook transfer", "speedup", "≥ 5×"),
    ("The same, 2 threads", "Bank transfer, batched notifications, 2 threads",
     "peer: textbook transfer, 2 threads", "speedup", "≥ 5×"),
    ("Bank transfer, a notification per change (until delivered), speed-up over textbook", "Bank transfer",
     "peer: textbook transfer", "speedup", "—"),
    ("The same, 2 threads", "Bank transfer, 2 threads", "peer: textbook transfer, 2 threads", "speedup", "—"),
    ("The floor of a change: the textbook's `async` and post over the Bank's post",
     "floor: post the Bank's notification, as the Bank does", "floor: the textbook's async and post", "speedup", "—"),
    ("Bank transfer, one `changes` consumer and batched notifications (until both delivered), speed-up over textbook",
     "Bank transfer, one changes consumer, batched notifications", "peer: textbook transfer", "speedup", "≥ 5×"),
    ("The same, 2 threads", "Bank transfer, one changes consumer, batched notifications, 2 threads",
     "peer: textbook transfer, 2 threads", "speedup", "≥ 5×"),
    ("Bank transfer, one `changes` consumer and a notification per change, speed-up over textbook",
     "Bank transfer, one changes consumer", "peer: textbook transfer", "speedup", "—"),
    ("90 % reads, 2 threads: readers-writer ledger vs serial", "Bank 90% reads, 2 threads, readersWriter",
     "Bank 90% reads, 2 threads, serial", "time", "—"),
    ("1M accounts: `totalBalanceInAllAccounts` vs one transfer (upper bound of hold time)",
     "Bank totalBalanceInAllAccounts, 1M accounts", "Bank transfer, 1M accounts", "time", "≤ 2×"),
    ("Import of 2,000 XML/JSON files into a store on disk, end to end (ms): speed-up over one thread "
     "that reads, parses and inserts them in one transaction", "Import 2000 files into a store",
     "peer: one thread imports 2000 files into a store", "speedup", "≥ 1.6×"),
    ("The same for 10,000 files (ms)", "Import 10000 files into a store",
     "peer: one thread imports 10000 files into a store", "speedup", "—"),
    ("The same for 1,000 files (ms)", "Import 1000 files into a store",
     "peer: one thread imports 1000 files into a store", "speedup", "—"),
    ("Import of 4,000 files over 1,000 (ms; linear is 4×)", "Import 4000 files into a store",
     "Import 1000 files into a store", "time", "≤ 5×"),
    ("Reading and parsing 2,000 files on 2 threads over 1, nothing stored (ms)",
     "bound: parse 2000 files on 2 threads, nothing stored", "peer: parse 2000 files on one thread, nothing stored",
     "speedup", "—"),
    ("`allDocs` of 10,000 names with a writer vs copying under NSLock", "allDocs of 10000 names, writer adding",
     "peer: copy 10000 names under NSLock, writer adding", "time", "≤ 2×"),
]

# Rows timed in microseconds per iteration (the bounded queue moves 100,000 items): shown in ms.
IN_MICROSECONDS_SHOWN_IN_MS = {
    "bounded queue, Exclusive.access(when:), 1 producer", "bounded queue, Exclusive.access(when:), 2 producers",
    "peer: bounded queue, NSCondition, 1 producer", "peer: bounded queue, NSCondition, 2 producers",
    "peer: bounded queue, DispatchSemaphore, 1 producer", "peer: bounded queue, DispatchSemaphore, 2 producers",
}

# Rows counted in thousands of operations (ExclusionBenchmarks, but for submitting): their times
# are per thousand operations, that is picoseconds per operation, and are divided back here.
PER_THOUSAND = {
    "Exclusive.access", "peer: NSLock", "peer: Mutex", "peer: DispatchQueue.sync",
    "Exclusive.access, 2 threads", "peer: NSLock, 2 threads", "peer: DispatchQueue.sync, 2 threads",
    "ReadersWriter.read", "peer: pthread_rwlock read", "peer: concurrent DispatchQueue.sync read",
    "ReadersWriter.read, 2 threads", "peer: pthread_rwlock read, 2 threads", "ReadersWriter.write",
    "peer: concurrent DispatchQueue barrier sync", "Exclusive.access nested in another",
    "peer: NSLock nested in another", "await Exclusive.access", "peer: actor method call",
    "Exclusive.access, one values consumer", "peer: Mutex and AsyncStream (newest 1), one consumer",
    "Exclusive.access, profiled", "Exclusive.access, 2 threads, profiled",
}

# Absolute times worth a line of their own.
SINGLES = [
    ("1M accounts: `totalBalance(deliverOn:)` to completion", "Bank totalBalance(deliverOn:) to completion, 1M accounts"),
    ("1M accounts: one balance read", "Bank balance read, 1M accounts"),
    ("One post of the Bank's notification, as the Bank posts it", "floor: post the Bank's notification, as the Bank does"),
    ("The same with a userInfo per post", "floor: post the Bank's notification, a userInfo per post"),
    ("The textbook's `async` and post of one change", "floor: the textbook's async and post"),
    ("The peer's storing alone: inserting 2,000 parsed files in one transaction (ms)",
     "peer's storing alone: insert 2000 parsed files in one transaction"),
    ("In memory, labelled as such: import of 2,000 files into `DocumentManager()` (ms)",
     "in memory: import 2000 files into DocumentManager()"),
]


def number(value):
    """Four significant digits, but never in exponent notation."""
    return f"{value:.4g}" if abs(value) < 10_000 else f"{value:.0f}"


def medians(output, metric):
    """The median of `metric` for each benchmark in the markdown output."""
    result, name = {}, None
    for line in output.splitlines():
        if line.startswith("### "):
            name = line[4:].strip()
        elif name and line.startswith("| " + metric):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            divisor = 1000 if name in PER_THOUSAND or name in IN_MICROSECONDS_SHOWN_IN_MS else 1
            result[name] = float(cells[3]) / divisor  # metric, p0, p25, p50, ...
    return result


def scaled_medians(output, metric):
    """The median of a custom `metric` for each benchmark, undoing ordo-one's (K) and (M) units."""
    result, name = {}, None
    for line in output.splitlines():
        if line.startswith("### "):
            name = line[4:].strip()
        elif name and line.startswith("| " + metric):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            scale = 1_000 if "(K)" in cells[0] else 1_000_000 if "(M)" in cells[0] else 1
            result[name] = float(cells[3]) * scale
    return result


# Profiled over unprofiled within one iteration, run back to back (a custom metric in percent):
# (what, benchmark, target). Two separate rows of identical code can differ by 40 % in one run.
PAIRED = [
    ("The same, 2 threads: each iteration over its unprofiled twin", "Exclusive.access, 2 threads, profiled",
     "≤ 1.10×"),
    ("The same, 4 threads, 1 µs inside: each iteration over its unprofiled twin",
     "contention: Exclusive.access, 4 threads, 1 µs inside, profiled", "≤ 1.10×"),
    ("The same, 8 threads, 0.1 µs inside and out: each iteration over its unprofiled twin",
     "contention: Exclusive.access, 8 threads, 0.1 µs inside and out, profiled", "≤ 1.10×"),
]

# Latency of one call, from custom metrics: (what, during, idle, metric).
LATENCIES = [
    ("`allDocs` during an import of 10,000 files into a store on disk, vs the same store with no import: "
     "median call (ns)", "allDocs latency during an import of 10000 files", "allDocs latency, no import",
     "allDocs p50 (ns)"),
    ("The same, 99th percentile (ns)", "allDocs latency during an import of 10000 files",
     "allDocs latency, no import", "allDocs p99 (ns)"),
    ("The same, longest call (ns; median over iterations)", "allDocs latency during an import of 10000 files",
     "allDocs latency, no import", "allDocs max (ns)"),
]


def main():
    arguments = sys.argv[1:]
    runs = 3
    if arguments[:1] == ["--runs"]:
        runs, arguments = int(arguments[1]), arguments[2:]
    command = ["swift", "package", "benchmark", "--no-progress", "--format", "markdown",
               # InstanceCost is a plain program of its own (`instance_cost.py`), which the plugin
               # would run as it runs every executable target, and which fails under its protocol.
               "--skip-target", "InstanceCost"] + arguments
    outputs = []
    for _ in range(runs):
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            # Say which benchmark died and how, rather than hiding it behind a Python traceback.
            sys.exit(f"benchmark run failed ({result.returncode}):\n" + "\n".join(result.stderr.splitlines()[-40:]))
        outputs.append(result.stdout)
    times = [medians(output, "Time (wall clock)") for output in outputs]
    print(f"| Operation | Exclusion (ns) | Peer (ns) | Ratio (median of {runs} runs) | Target |")
    print("|---|---:|---:|---:|---|")
    for what, ours, peer, kind, target in ROWS:
        present = [run for run in times if ours in run and peer in run]
        if not present:
            continue
        ratios = [run[ours] / run[peer] if kind == "time" else run[peer] / run[ours] for run in present]
        ours_time = statistics.median(run[ours] for run in present)
        peer_time = statistics.median(run[peer] for run in present)
        spread = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""
        print(f"| {what} | {number(ours_time)} | {number(peer_time)} | {statistics.median(ratios):.2f}×{spread} | {target} |")
    twins = [scaled_medians(output, "Profiled over unprofiled twin") for output in outputs]
    for what, name, target in PAIRED:
        ratios = [run[name] / 100 for run in twins if name in run]
        if ratios:
            spread = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""
            print(f"| {what} | | | {statistics.median(ratios):.2f}×{spread} | {target} |")
    for what, during, idle, metric in LATENCIES:
        values = [scaled_medians(output, metric) for output in outputs]
        present = [run for run in values if during in run and idle in run]
        if present:
            ratios = [run[during] / run[idle] for run in present]
            spread = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""
            print(f"| {what} | {number(statistics.median(run[during] for run in present))} | "
                  f"{number(statistics.median(run[idle] for run in present))} | "
                  f"{statistics.median(ratios):.2f}×{spread} | {'≤ 10×, and under 1 ms' if 'p99' in metric else '—'} |")
    for what, name in SINGLES:
        values = [run[name] for run in times if name in run]
        if values:
            print(f"| {what} | {number(statistics.median(values))} | | | |")
    allocations = medians(outputs[0], "Malloc (total)")
    ours = [f"{name} {count:g}" for name, count in sorted(allocations.items()) if not name.startswith("peer")]
    if ours:
        print("\nHeap allocations per operation (median): " + "; ".join(ours) + ".")


if __name__ == "__main__":
    main()

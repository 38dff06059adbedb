#!/usr/bin/env python3
"""Runs the contention matrix of ExclusionBenchmarks three times and prints it: `Exclusive.access`
against `pthread_mutex_t` around the same work, threads {2, 4, 8, 16} x four workloads, as the
median time per iteration (10,000 accesses) over the runs, the median of the per-run ratios with
their range, and the longest single wait for the lock seen in any iteration of any run.

Usage, from this folder: python3 contention.py [--runs N]
"""
import re
import statistics
import subprocess
import sys

from ratios import medians

WORKLOADS = ["0.1 µs inside and out", "1 µs inside", "1 µs inside and out", "5 µs inside"]


def longest_waits(output):
    """The largest 'Longest wait' value (p100) of each benchmark, in µs."""
    result, name = {}, None
    scale = {"": 1, "(K)": 1_000, "(M)": 1_000_000}
    for line in output.splitlines():
        if line.startswith("### "):
            name = line[4:].strip()
        elif name and line.startswith("| Longest wait (µs)"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            unit = re.search(r"\((K|M)\)", cells[0])
            result[name] = float(cells[7]) * scale[unit.group(0) if unit else ""]
    return result


def main():
    arguments = sys.argv[1:]
    runs = 3
    if arguments[:1] == ["--runs"]:
        runs = int(arguments[1])
    command = ["swift", "package", "benchmark", "--target", "ExclusionBenchmarks", "--filter", "contention.*",
               "--no-progress", "--format", "markdown"]
    outputs = []
    for _ in range(runs):
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            sys.exit(f"benchmark run failed ({result.returncode}):\n" + "\n".join(result.stderr.splitlines()[-40:]))
        outputs.append(result.stdout)
    times = [medians(output, "Time (wall clock)") for output in outputs]
    waits = [longest_waits(output) for output in outputs]
    print(f"µs per 10,000 accesses (median of {runs} runs); longest single wait for the lock in any run, in µs\n")
    print("| threads | work | pthread_mutex_t | longest | Exclusive.access | longest | ratio (range) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    for threads in [2, 4, 8, 16]:
        for workload in WORKLOADS:
            ours = f"contention: Exclusive.access, {threads} threads, {workload}"
            peer = f"contention: peer: pthread_mutex_t, {threads} threads, {workload}"
            present = [run for run in times if ours in run and peer in run]
            if not present:
                continue
            ratios = [run[ours] / run[peer] for run in present]
            ours_wait = max(run.get(ours, 0) for run in waits)
            peer_wait = max(run.get(peer, 0) for run in waits)
            print(f"| {threads} | {workload} | {statistics.median(run[peer] for run in present):.0f} | "
                  f"{peer_wait:.0f} | {statistics.median(run[ours] for run in present):.0f} | {ours_wait:.0f} | "
                  f"{statistics.median(ratios):.2f}× ({min(ratios):.2f}–{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()

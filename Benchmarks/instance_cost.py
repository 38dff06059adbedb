#!/usr/bin/env python3
"""Prints what one instance costs, Exclusion's and its peers', for Benchmarks/README.md ("What an
instance costs"): resident bytes per live instance, nanoseconds to make one, and heap allocations
when made and at first use.

Each kind runs in a fresh process (InstanceCost), which makes COUNT instances, keeps them all alive
and uses each once; every kind runs RUNS times, in turn, and each figure is the best of its runs.
Allocations are counted by a preloaded counter of malloc calls (InstanceCost/malloc-count.c, glibc).

Usage, from this folder: python3 instance_cost.py [--runs N] [--count N] [--skip-build]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

KINDS = [
    ("Exclusive", "`Exclusive<Int>`"),
    ("ReadersWriter", "`ReadersWriter<Int>`"),
    ("Mutex", "`Mutex<Int>` in a final class"),
    ("NSLock", "`NSLock` + a var in a final class"),
    ("actor", "an actor with one `Int`"),
    ("DispatchQueue", "`DispatchQueue` + a var in a final class (the original pattern)"),
    ("Exclusive, submitted", "`Exclusive<Int>`, used once with `accessAsync`"),
    ("DispatchQueue, submitted", "the `DispatchQueue` box, used once with `async`"),
]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--count", type=int, default=200_000)
    parser.add_argument("--skip-build", action="store_true")
    options = parser.parse_args()
    here = os.path.dirname(os.path.abspath(__file__))
    if not options.skip_build:
        subprocess.run(["swift", "build", "-c", "release", "--product", "InstanceCost"], cwd=here, check=True,
                       stdout=subprocess.DEVNULL)
    binary = subprocess.run(["swift", "build", "-c", "release", "--show-bin-path"], cwd=here, check=True,
                            capture_output=True, text=True).stdout.strip() + "/InstanceCost"
    with tempfile.TemporaryDirectory() as scratch:
        counter = os.path.join(scratch, "libmalloc-count.so")
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", counter,
                        os.path.join(here, "InstanceCost", "malloc-count.c")], check=True)
        environment = dict(os.environ, LD_PRELOAD=counter)
        results = {kind: [] for kind, _ in KINDS}
        for _ in range(options.runs):
            for kind, _ in KINDS:
                output = subprocess.run([binary, kind, str(options.count)], env=environment, check=True,
                                        capture_output=True, text=True).stdout
                results[kind].append(json.loads(output))

    figures = [key for key in results["Mutex"][0] if key not in ("kind", "count")]
    best = {kind: {key: min(run[key] for run in runs) for key in figures} for kind, runs in results.items()}
    worst = {kind: {key: max(run[key] for run in runs) for key in figures} for kind, runs in results.items()}
    mutex = best["Mutex"]
    print(f"{options.count:,} instances made and kept alive, each used once; each kind in a fresh process, "
          f"best of {options.runs} (worst)")
    print()
    print("| kind | resident bytes per instance | ns to make one | allocations to make | allocations at first use "
          "| bytes, ns over the `Mutex` box |")
    print("|---|---:|---:|---:|---:|---:|")
    for kind, title in KINDS:
        row = best[kind]
        print(f"| {title} | {row['bytes']:,.0f} ({worst[kind]['bytes']:,.0f}) "
              f"| {row['make_ns']:,.0f} ({worst[kind]['make_ns']:,.0f}) | {row['init_mallocs']:.1f} "
              f"| {row['use_mallocs']:.1f} | {row['bytes'] / mutex['bytes']:.2f}×, "
              f"{row['make_ns'] / mutex['make_ns']:.2f}× |")


if __name__ == "__main__":
    sys.exit(main())

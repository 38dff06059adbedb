#!/usr/bin/env python3
"""A/B: runs the same benchmarks in two checkouts of this package, alternately, and prints each
benchmark's median time in both and their ratio (this checkout over the other; below 1 is faster).

Usage, from this folder:
    python3 ab.py --base DIR [--runs N] [--portable] [extra arguments for `swift package benchmark`]

DIR is the Benchmarks folder of the other checkout, for example of the commit before a change:
    git worktree add /tmp/base HEAD~1 && python3 ab.py --base /tmp/base/Benchmarks --target ExclusionBenchmarks
Runs alternate (base, this, base, this, ...) so that the machine's drift hits both sides alike.

--portable builds both sides with EXCLUSION_PORTABLE_LOCK, the Apple platforms' design on Linux (the
configuration that stands in for them). Give each configuration checkouts of its own: a checkout
built the other way is rebuilt from scratch.
"""
import os
import statistics
import subprocess
import sys

from ratios import medians


PORTABLE = ["-Xcc", "-DEXCLUSION_PORTABLE_LOCK", "-Xswiftc", "-DEXCLUSION_PORTABLE_LOCK"]


def run(folder, arguments, options):
    command = ["swift", "package"] + options + ["benchmark", "--no-progress", "--format", "markdown",
               # InstanceCost is a plain program of its own (`instance_cost.py`), which the plugin
               # would run as it runs every executable target, and which fails under its protocol.
               "--skip-target", "InstanceCost"] + arguments
    result = subprocess.run(command, capture_output=True, text=True, cwd=folder)
    if result.returncode != 0:
        sys.exit(f"benchmark run in {folder} failed ({result.returncode}):\n"
                 + "\n".join(result.stderr.splitlines()[-40:]))
    return medians(result.stdout, "Time (wall clock)")


def main():
    arguments = sys.argv[1:]
    base, runs, options = None, 3, []
    while arguments[:1] in (["--base"], ["--runs"], ["--portable"]):
        if arguments[0] == "--portable":
            options = PORTABLE
            arguments = arguments[1:]
            continue
        if arguments[0] == "--base":
            base = arguments[1]
        else:
            runs = int(arguments[1])
        arguments = arguments[2:]
    if base is None:
        sys.exit(__doc__)
    here = os.path.dirname(os.path.abspath(__file__))
    before, after = [], []
    for _ in range(runs):
        before.append(run(base, arguments, options))
        after.append(run(here, arguments, options))
    print(f"| Benchmark | Base (ns) | This (ns) | This / base (median of {runs} pairs) |")
    print("|---|---:|---:|---:|")
    for name in after[0]:
        pairs = [(b[name], a[name]) for b, a in zip(before, after) if name in b and name in a]
        if not pairs:
            continue
        ratios = [a / b for b, a in pairs]
        spread = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""
        print(f"| {name} | {statistics.median(b for b, _ in pairs):.4g} | "
              f"{statistics.median(a for _, a in pairs):.4g} | {statistics.median(ratios):.2f}×{spread} |")


if __name__ == "__main__":
    main()

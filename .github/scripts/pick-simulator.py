#!/usr/bin/env python3
"""Picks the iPhone simulator the iOS job tests on: one of the runtime that matches the selected
Xcode's iOS Simulator SDK, or else of the newest runtime that isn't newer than that SDK.

A runner image carries several Xcodes and several simulator runtimes. A runtime newer than the SDK
the tests are built with can refuse the build or run it against a system its SDK doesn't describe,
so the runtime follows the SDK, not the image.

Usage: xcrun simctl list -j | pick-simulator.py SDK_VERSION
Prints the device's UDID, the runtime's version and the device's name, separated by tabs; exits
non-zero, saying why on standard error, when no runtime fits.
"""
import json
import sys


def version(text):
    """A dotted version as a tuple of numbers, major and minor only (26.4.1 runs what 26.4 builds)."""
    parts = [int(part) for part in text.split(".")[:2]]
    return tuple(parts + [0] * (2 - len(parts)))


def pick(listing, sdk):
    """The (udid, runtime version, name) to test on, or raises LookupError saying why not."""
    ceiling = version(sdk)
    runtimes = [
        runtime
        for runtime in listing.get("runtimes", [])
        if runtime.get("platform") == "iOS" and runtime.get("isAvailable", False)
    ]
    fitting = [runtime for runtime in runtimes if version(runtime["version"]) <= ceiling]
    if not fitting:
        found = ", ".join(sorted(runtime["version"] for runtime in runtimes)) or "none"
        raise LookupError(f"no iOS simulator runtime at or below the SDK's {sdk} (available: {found})")
    # The newest first; at equal major and minor versions, the newest point release.
    fitting.sort(key=lambda runtime: [int(part) for part in runtime["version"].split(".")], reverse=True)
    for runtime in fitting:
        devices = listing.get("devices", {}).get(runtime["identifier"], [])
        phones = [d for d in devices if d.get("isAvailable", False) and d["name"].startswith("iPhone")]
        if phones:
            return phones[0]["udid"], runtime["version"], phones[0]["name"]
    raise LookupError(f"no available iPhone on an iOS runtime at or below the SDK's {sdk}")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: xcrun simctl list -j | pick-simulator.py SDK_VERSION")
    try:
        udid, runtime, name = pick(json.load(sys.stdin), sys.argv[1])
    except LookupError as error:
        sys.exit(str(error))
    print(udid, runtime, name, sep="\t")


if __name__ == "__main__":
    main()

"""Tests of pick-simulator.py on listings shaped as `xcrun simctl list -j` prints them.

Run: python3 -m unittest discover -s .github/scripts   (.ci/lint-workflows.sh runs it)
"""
import importlib.util
import pathlib
import unittest

_spec = importlib.util.spec_from_file_location("pick_simulator", pathlib.Path(__file__).with_name("pick-simulator.py"))
pick_simulator = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pick_simulator)


def runtime(version, available=True, platform="iOS"):
    identifier = f"com.apple.CoreSimulator.SimRuntime.{platform}-{version.replace('.', '-')}"
    return {"identifier": identifier, "version": version, "platform": platform, "isAvailable": available}


def listing(*runtimes, devices=None):
    if devices is None:
        devices = {r["identifier"]: [{"udid": f"UDID-{r['version']}", "name": "iPhone 17 Pro", "isAvailable": True}]
                   for r in runtimes}
    return {"runtimes": list(runtimes), "devices": devices}


class PickSimulatorTests(unittest.TestCase):
    def test_the_runtime_of_the_sdk_is_picked_over_a_newer_one(self):
        picked = pick_simulator.pick(listing(runtime("18.6"), runtime("26.4"), runtime("26.5")), "26.4")
        self.assertEqual(picked, ("UDID-26.4", "26.4", "iPhone 17 Pro"))

    def test_a_point_release_of_the_sdks_version_counts_as_it(self):
        picked = pick_simulator.pick(listing(runtime("26.4"), runtime("26.4.1")), "26.4")
        self.assertEqual(picked[1], "26.4.1")

    def test_without_the_sdks_runtime_the_newest_older_one_is_picked(self):
        picked = pick_simulator.pick(listing(runtime("18.6"), runtime("26.2"), runtime("26.5")), "26.4")
        self.assertEqual(picked[1], "26.2")

    def test_versions_compare_as_numbers(self):
        picked = pick_simulator.pick(listing(runtime("26.9"), runtime("26.10")), "26.10")
        self.assertEqual(picked[1], "26.10")

    def test_unavailable_runtimes_other_platforms_and_runtimes_without_iphones_are_skipped(self):
        without_phones = runtime("26.3")
        phones = runtime("26.1")
        devices = {
            without_phones["identifier"]: [{"udid": "PAD", "name": "iPad Air", "isAvailable": True}],
            phones["identifier"]: [
                {"udid": "GONE", "name": "iPhone 16", "isAvailable": False},
                {"udid": "HERE", "name": "iPhone 16e", "isAvailable": True},
            ],
        }
        runtimes = (runtime("26.4", available=False), runtime("26.4", platform="tvOS"), without_phones, phones)
        self.assertEqual(pick_simulator.pick(listing(*runtimes, devices=devices), "26.4"), ("HERE", "26.1", "iPhone 16e"))

    def test_only_newer_runtimes_is_an_error_naming_them(self):
        with self.assertRaises(LookupError) as caught:
            pick_simulator.pick(listing(runtime("26.5")), "26.4")
        self.assertIn("26.5", str(caught.exception))


if __name__ == "__main__":
    unittest.main()

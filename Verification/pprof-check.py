#!/usr/bin/env python3
"""The two halves of Verification/pprof-check.sh that are easier in Python than in bash.

    pprof-check.py check RAW TABLE
        Checks what `go tool pprof -raw` printed (RAW) for a profile of `bank simulate`, against
        the table the tool printed on standard error (TABLE). Prints what is wrong and exits 1, or
        prints a one-line summary and exits 0.

    pprof-check.py break GOOD DIR
        Writes broken copies of the profile GOOD into DIR, one per way a writer can get the format
        wrong, and prints their names. Each is GOOD decompressed, edited as protobuf, and
        compressed again, so that only the edit differs.

    pprof-check.py misprint TABLE OUT
        Writes TABLE to OUT with the ledger's total wait two units of its last digit too high, a
        misprint `check` must catch while it allows the table's rounding.

The profile is a gzip-compressed `perftools.profiles.Profile` message (pprof's profile.proto):
field 1 sample_type, 2 sample, 4 location, 5 function, 6 string_table, 9 time_nanos,
10 duration_nanos, 11 period_type, 12 period. Strings are referred to by their index in the
string table, whose first entry must be "".
"""

import gzip
import os
import re
import sys

# What a profile of `bank simulate` must hold (Sources/Banking/LedgerStore.swift labels the ledger).
LEDGER_LABEL = "bank ledger"
LEDGER_TYPE = "Exclusive<Ledger>"
SAMPLE_TYPES = "contentions/count delay/nanoseconds"
CALL_SITE = re.compile(r"^Banking/\w+\.swift$")


# MARK: - Checking `go tool pprof -raw` output


def parse_raw(text):
    """The sample types, samples (values, location ids, labels) and locations of -raw output."""
    lines = text.split("\n")
    profile = {"period_type": None, "sample_types": None, "samples": [], "locations": {}}
    section = None
    for index, line in enumerate(lines):
        if line.startswith("PeriodType: "):
            profile["period_type"] = line[len("PeriodType: ") :]
        elif line == "Samples:":
            section = "samples"
            profile["sample_types"] = lines[index + 1] if index + 1 < len(lines) else ""
        elif line in ("Locations", "Mappings"):
            section = line.lower()
        elif section == "samples":
            values = re.match(r"^\s+(\d+)\s+(\d+):((?:\s+\d+)+)\s*$", line)
            if values:
                profile["samples"].append(
                    {
                        "count": int(values.group(1)),
                        "nanoseconds": int(values.group(2)),
                        "locations": [int(number) for number in values.group(3).split()],
                        "labels": {},
                    }
                )
            elif line.strip().startswith("label:") or " type:[" in line:
                if profile["samples"]:
                    profile["samples"][-1]["labels"] = dict(re.findall(r"(\w+):\[(.*?)\]", line))
        elif section == "locations":
            # "     2: 0x0 M=1 waited at Banking/Bank.swift:190 Banking/Bank.swift:190 s=190"
            location = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (.*) (\S*):(\d+) s=\d+", line)
            if location:
                profile["locations"][int(location.group(1))] = {
                    "function": location.group(2),
                    "file": location.group(3),
                    "line": int(location.group(4)),
                }
    return profile


def parse_table(text):
    """Each instance's waits, total wait in nanoseconds and that total's precision, as the tool's
    table prints them: the total is rounded to the digits shown ("1.67 s" is 1.665 s to 1.675 s),
    so it can differ from pprof's exact sum by up to one unit of its last digit."""
    units = {"ns": 1, "µs": 1e3, "ms": 1e6, "s": 1e9}
    instances = {}
    for line in text.split("\n"):
        row = re.match(r'^"(.*)" (\S+)\s+(\d+)\s+(\d+)(?:\.(\d+))? (ns|µs|ms|s)\s', line)
        if row:
            decimals = len(row.group(5) or "")
            unit = units[row.group(6)]
            total = float(f"{row.group(4)}.{row.group(5) or '0'}") * unit
            instances[row.group(1)] = (int(row.group(3)), total, unit / 10**decimals)
    return instances


def check(raw_text, table_text):
    """What is wrong with the profile, as a list of sentences; empty when nothing is."""
    problems = []
    profile = parse_raw(raw_text)
    if profile["period_type"] != "contentions count":
        problems.append(f"the period type is {profile['period_type']!r}, not 'contentions count'")
    if profile["sample_types"] != SAMPLE_TYPES:
        problems.append(f"the sample types are {profile['sample_types']!r}, not {SAMPLE_TYPES!r}")
    samples = profile["samples"]
    if not samples:
        problems.append("no samples")
    for sample in samples:
        if set(sample["labels"]) != {"label", "type", "wait"}:
            problems.append(f"a sample's labels are {sorted(sample['labels'])}, not label, type and wait")
            break
        if any(number not in profile["locations"] for number in sample["locations"]):
            problems.append(f"a sample names locations {sample['locations']}, not all of them listed")
            break
    ledger = [sample for sample in samples if sample["labels"].get("label") == LEDGER_LABEL]
    if not ledger:
        problems.append(f"no sample is labelled {LEDGER_LABEL!r}")
    elif any(sample["labels"].get("type") != LEDGER_TYPE for sample in ledger):
        problems.append(f"a sample of {LEDGER_LABEL!r} has a type other than {LEDGER_TYPE!r}")

    # Each ledger sample's stack, innermost first: the holder, the waiter, the instance. The waiter
    # is a call site in Banking, with its file and line where pprof keeps them.
    waiters = set()
    for sample in ledger:
        locations = [profile["locations"].get(number) for number in sample["locations"]]
        if len(locations) != 3 or None in locations:
            problems.append(f"a ledger sample's stack is {sample['locations']}, not holder, waiter, instance")
            break
        holder, waiter, instance = locations
        if not holder["function"].startswith("held by "):
            problems.append(f"a ledger sample's innermost frame is {holder['function']!r}, not a holder")
            break
        if not waiter["function"].startswith("waited at "):
            problems.append(f"a ledger sample's second frame is {waiter['function']!r}, not a waiting site")
            break
        if LEDGER_LABEL not in instance["function"]:
            problems.append(f"a ledger sample's outermost frame is {instance['function']!r}, not the ledger")
            break
        if CALL_SITE.match(waiter["file"]) and waiter["line"] > 0:
            if waiter["function"] != f"waited at {waiter['file']}:{waiter['line']}":
                problems.append(f"the waiting site {waiter['function']!r} is not at {waiter['file']}:{waiter['line']}")
                break
            waiters.add(f"{waiter['file']}:{waiter['line']}")
    if ledger and not waiters:
        problems.append("no ledger sample names a waiting site in Banking's sources, with its file and line")

    # The values pprof read are those the tool counted.
    table = parse_table(table_text)
    if LEDGER_LABEL not in table:
        problems.append(f"the tool's table has no row for {LEDGER_LABEL!r}")
    totals = {}
    for sample in samples:
        label = sample["labels"].get("label")
        count, nanoseconds = totals.get(label, (0, 0))
        totals[label] = (count + sample["count"], nanoseconds + sample["nanoseconds"])
    for label, (waits, nanoseconds, precision) in table.items():
        read = totals.get(label, (0, 0))
        if read[0] != waits or abs(read[1] - nanoseconds) > precision:
            problems.append(
                f"{label!r}: the table counts {waits} waits and {nanoseconds:.0f} ns, pprof read {read[0]} and {read[1]}"
            )
    if not problems:
        count, nanoseconds = totals[LEDGER_LABEL]
        print(
            f"ok: {len(samples)} samples; {LEDGER_LABEL!r} ({LEDGER_TYPE}) {count} waits, {nanoseconds / 1e6:.2f} ms,"
            f" as the table says; waiting sites {', '.join(sorted(waiters))}"
        )
    return problems


# MARK: - Protobuf, as far as the variants need it


def read_varint(data, index):
    value, shift = 0, 0
    while True:
        byte = data[index]
        value |= (byte & 0x7F) << shift
        index += 1
        if byte < 0x80:
            return value, index
        shift += 7


def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def fields(data):
    """The message's fields in order, as [number, wire type, value]: an int for varints (type 0),
    the bytes for length-delimited fields (type 2), the only two types a profile uses."""
    out, index = [], 0
    while index < len(data):
        key, index = read_varint(data, index)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, index = read_varint(data, index)
        elif wire_type == 2:
            length, index = read_varint(data, index)
            value, index = data[index : index + length], index + length
        else:
            raise ValueError(f"wire type {wire_type} in a profile")
        out.append([number, wire_type, value])
    return out


def encode(message):
    out = bytearray()
    for number, wire_type, value in message:
        out += varint(number << 3 | wire_type)
        out += varint(value) if wire_type == 0 else varint(len(value)) + value
    return bytes(out)


# MARK: - The broken variants


def variants(profile):
    """Broken copies of the decompressed profile, by name. The first ones break the format, which
    Go's reader must refuse; the last ones keep the format and break what it says, which the checks
    must catch."""
    message = fields(profile)
    # Read and written back unedited, the profile is the same bytes: what differs in a variant is
    # its edit, and nothing this helper does besides.
    if encode(message) != profile:
        raise ValueError("the profile doesn't survive being read and written back unedited")
    strings = [field for field in message if field[0] == 6]
    out = {}

    # The string table under a wrong field number: 7 is drop_frames, a varint, so pprof sees a
    # wire type it doesn't expect.
    out["wrong-field-number"] = encode([[7 if f[0] == 6 else f[0], f[1], f[2]] for f in message])

    # The sample under field 3 (mapping) instead of 2: each sample read as a mapping.
    out["sample-as-mapping"] = encode([[3 if f[0] == 2 else f[0], f[1], f[2]] for f in message])

    # An unterminated string table: the last string's length runs past the end of the profile.
    last = max(index for index, field in enumerate(message) if field[0] == 6)
    head = encode(message[:last])
    text = message[last][2]
    tail = encode(message[last + 1 :])
    out["unterminated-string-table"] = (
        head + varint(6 << 3 | 2) + varint(len(text) + len(tail) + 16) + text + tail
    )

    # A string table cut off in its middle: the profile ends inside a string.
    middle = len(strings) // 2
    cut = encode(message[: message.index(strings[middle])]) + varint(6 << 3 | 2) + varint(len(strings[middle][2]))
    out["string-table-cut-short"] = cut + strings[middle][2][: len(strings[middle][2]) // 2]

    # A string table that doesn't start with "": every index is off by one.
    out["string-table-without-empty-first"] = encode([field for field in message if field is not strings[0]])

    # Ids of 0, which profile.proto reserves: the first location's (and the samples that name it),
    # and the first function's (and the lines that name it).
    def renumbered(kind, old, new):
        def swap(value):
            return new if value == old else value

        def with_id(body):  # field 1, the id, renumbered
            return encode([[f[0], f[1], swap(f[2]) if f[0] == 1 and f[1] == 0 else f[2]] for f in fields(body)])

        def packed(data):
            values, index = [], 0
            while index < len(data):
                value, index = read_varint(data, index)
                values.append(value)
            return b"".join(varint(swap(value)) for value in values)

        out = []
        for number, wire_type, body in message:
            if number == kind:
                body = with_id(body)
            if kind == 5 and number == 4:  # a location's lines name functions by id
                body = encode([[f[0], f[1], with_id(f[2]) if f[0] == 4 else f[2]] for f in fields(body)])
            if kind == 4 and number == 2:  # a sample names its locations by id, packed
                body = encode([[f[0], f[1], packed(f[2]) if f[0] == 1 and f[1] == 2 else f[2]] for f in fields(body)])
            out.append([number, wire_type, body])
        return encode(out)

    out["location-id-zero"] = renumbered(4, 1, 0)
    out["function-id-zero"] = renumbered(5, 1, 0)

    # One sample type fewer than each sample has values.
    first_type = next(field for field in message if field[0] == 1)
    out["values-without-types"] = encode([field for field in message if field is not first_type])

    # Well-formed, but not what the bank wrote: another label, other sample types, no call sites.
    def replaced(old, new):
        return encode([[f[0], f[1], f[2].replace(old, new) if f[0] == 6 else f[2]] for f in message])

    out["wrong-ledger-label"] = replaced(LEDGER_LABEL.encode(), b"bank lodger")
    out["wrong-sample-type"] = replaced(b"contentions", b"contentionz")
    out["no-call-sites"] = replaced(b"Banking/", b"Bunking/")
    return out


def misprinted(table_text):
    """The table with the ledger's total wait two units of its last digit too high: the check must
    tell it from the rounding it allows."""
    def bump(row):
        whole, decimals = row.group(2), row.group(3) or ""
        digits = int(whole + decimals) + 2
        text = str(digits).rjust(len(whole + decimals), "0")
        total = f"{text[: len(text) - len(decimals)]}.{decimals and text[-len(decimals):]}".rstrip(".")
        return f"{row.group(1)}{total} {row.group(4)}"

    pattern = re.compile(r'^("' + re.escape(LEDGER_LABEL) + r'" \S+\s+\d+\s+)(\d+)(?:\.(\d+))? (ns|µs|ms|s)', re.M)
    return pattern.sub(bump, table_text, count=1)


def main(arguments):
    if len(arguments) == 3 and arguments[0] == "misprint":
        with open(arguments[1], encoding="utf-8") as table, open(arguments[2], "w", encoding="utf-8") as out:
            out.write(misprinted(table.read()))
        return 0
    if len(arguments) == 3 and arguments[0] == "check":
        with open(arguments[1], encoding="utf-8") as raw, open(arguments[2], encoding="utf-8") as table:
            problems = check(raw.read(), table.read())
        for problem in problems:
            print(f"problem: {problem}")
        return 1 if problems else 0
    if len(arguments) == 3 and arguments[0] == "break":
        with gzip.open(arguments[1], "rb") as good:
            profile = good.read()
        for name, data in variants(profile).items():
            with gzip.open(os.path.join(arguments[2], f"{name}.pb.gz"), "wb") as out:
                out.write(data)
            print(name)
        return 0
    print(__doc__, file=sys.stderr)
    return 64


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

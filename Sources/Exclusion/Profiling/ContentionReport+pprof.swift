import ExclusionShims
import Foundation

extension ContentionReport {
    /// The report as a gzip-compressed pprof profile (`profile.proto`), which `go tool pprof`,
    /// Speedscope and other pprof viewers open.
    ///
    /// Sample types are `contentions/count` and `delay/nanoseconds`, as in Go's mutex profile. Each
    /// sample is one instance, waiting site and holding site; its stack, innermost first, is the
    /// site that held the state ("held by …"), the site that waited ("waited at …") and the
    /// instance, so the flat view ranks holders, as Go's does, and the tree reads from the
    /// instance down. Labels carry the instance's `label`, its `type` and the `wait` kind.
    /// Condition waits are left out: they aren't contention.
    public func pprof() -> Data {
        var profile = _PprofBuilder()
        for row in rows where row.kind != .condition {
            let frames = [
                ("held by \(Self.describe(row.holder))", row.holder),
                ("waited at \(row.waiter?.description ?? "(no call site)")", row.waiter),
                ("\(row.type) \"\(row.label)\"", nil),
            ]
            profile.sample(
                locations: frames.map { profile.location($0.0, $0.1) }, values: [row.count, row.nanoseconds],
                labels: [("label", row.label), ("type", row.type), ("wait", row.kind.rawValue)])
        }
        return _gzip(
            profile.encoded(timeNanos: startedAt, durationNanos: _nanoseconds(duration), period: Int64(sampling.every)))
    }
}

/// Builds a `perftools.profiles.Profile` message in protobuf's wire format: varints and
/// length-delimited fields, zero-valued scalars left out as proto3 does.
///
/// Written by hand because the protobuf library in reach (swift-protobuf) needs code generated
/// from `profile.proto` by `protoc`, which isn't available here, and would make every user of
/// Exclusion build it, for a message this small.
struct _PprofBuilder {
    private var strings: [String: Int64] = ["": 0]
    private var table: [String] = [""]
    private var samples: [[UInt8]] = []
    private var locations: [[UInt8]] = []
    private var functions: [[UInt8]] = []
    private var locationIDs: [String: Int64] = [:]

    mutating func string(_ text: String) -> Int64 {
        if let index = strings[text] { return index }
        defer { table.append(text) }
        strings[text] = Int64(table.count)
        return Int64(table.count)
    }

    /// The location of a frame named `name` at `site`; one per distinct frame.
    mutating func location(_ name: String, _ site: ContentionReport.Site?) -> Int64 {
        let line = Int64(site?.line ?? 0)
        let key = "\(name)\u{0}\(site?.description ?? "")"
        if let id = locationIDs[key] { return id }
        let id = Int64(locationIDs.count + 1)
        locationIDs[key] = id
        let nameIndex = string(name)
        functions.append(
            Self.message([(1, id), (2, nameIndex), (3, nameIndex), (4, string(site?.file ?? "")), (5, line)]))
        var location = Self.message([(1, id)])
        Self.append(4, Self.message([(1, id), (2, line)]), to: &location)
        locations.append(location)
        return id
    }

    mutating func sample(locations ids: [Int64], values: [Int], labels: [(String, String)]) {
        var sample: [UInt8] = []
        Self.append(1, ids.flatMap { Self.varint(UInt64(bitPattern: $0)) }, to: &sample)
        Self.append(2, values.flatMap { Self.varint(UInt64($0)) }, to: &sample)
        for (key, value) in labels {
            Self.append(3, Self.message([(1, string(key)), (2, string(value))]), to: &sample)
        }
        samples.append(sample)
    }

    mutating func encoded(timeNanos: Int64, durationNanos: Int64, period: Int64) -> [UInt8] {
        let sampleTypes = [
            Self.message([(1, string("contentions")), (2, string("count"))]),
            Self.message([(1, string("delay")), (2, string("nanoseconds"))]),
        ]
        var profile: [UInt8] = []
        for (field, messages) in [(1, sampleTypes), (2, samples), (4, locations), (5, functions)] {
            for message in messages { Self.append(field, message, to: &profile) }
        }
        for text in table { Self.append(6, Array(text.utf8), to: &profile) }
        profile += Self.message([(9, timeNanos), (10, durationNanos)])
        Self.append(11, sampleTypes[0], to: &profile)  // the period's type: contentions, counted
        return profile + Self.message([(12, period)])
    }

    static func varint(_ value: UInt64) -> [UInt8] {
        var value = value
        var bytes: [UInt8] = []
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        return bytes + [UInt8(value)]
    }

    /// Varint fields, in order, those that are zero left out.
    static func message(_ fields: [(Int, Int64)]) -> [UInt8] {
        fields.filter { $0.1 != 0 }.flatMap { varint(UInt64($0.0) << 3) + varint(UInt64(bitPattern: $0.1)) }
    }

    /// A length-delimited field.
    static func append(_ field: Int, _ body: [UInt8], to bytes: inout [UInt8]) {
        bytes += varint(UInt64(field) << 3 | 2) + varint(UInt64(body.count)) + body
    }
}

/// `bytes` as a gzip member (RFC 1952), compressed with zlib; the bytes as they are if zlib can't
/// be had, which pprof readers accept as well (they look for gzip's magic number).
///
/// Foundation has no gzip on Linux, and the packages in reach that do (compress-nio) bring SwiftNIO
/// into every program that uses Exclusion; zlib itself is on every system (`ExclusionZlib.h` says
/// how each platform provides it).
func _gzip(_ bytes: [UInt8]) -> Data {
    let zlib = exclusion_zlib_functions()
    guard let compress2 = zlib.compress2, let crc32 = zlib.crc32 else { return Data(bytes) }
    var size = UInt(bytes.count + bytes.count / 1_000 + 64)
    var deflated = [UInt8](repeating: 0, count: Int(size))
    guard compress2(&deflated, &size, bytes, UInt(bytes.count), 9) == 0, size >= 6 else { return Data(bytes) }
    let crc = UInt32(truncatingIfNeeded: crc32(0, bytes, UInt32(bytes.count)))
    // zlib's format less its 2-byte header and 4-byte checksum is raw deflate, gzip's payload.
    var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF] + deflated[2..<(Int(size) - 4)]
    for word in [crc, UInt32(truncatingIfNeeded: bytes.count)] {
        out += (0..<4).map { UInt8(truncatingIfNeeded: word >> UInt32($0 * 8)) }
    }
    return Data(out)
}

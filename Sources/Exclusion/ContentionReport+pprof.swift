import Foundation

#if canImport(Darwin)
import Darwin
#elseif canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

// MARK: - pprof

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
        profile.sampleType("contentions", "count")
        profile.sampleType("delay", "nanoseconds")
        for row in rows where row.kind != .condition {
            let instance = profile.location(function: "\(row.type) \"\(row.label)\"", file: "", line: 0)
            let waiter = profile.location(
                function: "waited at \(row.waiter?.description ?? "(no call site)")", file: row.waiter?.file ?? "",
                line: row.waiter?.line ?? 0)
            let holder = profile.location(
                function: "held by \(ContentionReport.describe(row.holder, endedWhileSpinning: row.holderNotAsked))",
                file: row.holder?.file ?? "", line: row.holder?.line ?? 0)
            profile.sample(
                locations: [holder, waiter, instance], values: [row.count, row.nanoseconds],
                labels: [("label", row.label), ("type", row.type), ("wait", row.kind.rawValue)])
        }
        let seconds = duration.components
        return _gzip(
            profile.encoded(
                timeNanos: startedAt,
                durationNanos: seconds.seconds * 1_000_000_000 + seconds.attoseconds / 1_000_000_000,
                period: Int64(sampling.every)))
    }
}

/// Builds a `perftools.profiles.Profile` message in protobuf's wire format.
///
/// Written out by hand because the protobuf library in reach (swift-protobuf) needs code generated
/// from `profile.proto` by `protoc`, which isn't available here, and would make every user of
/// Exclusion build it; the message needs only varints and length-delimited fields.
struct _PprofBuilder {
    private var strings: [String] = [""]
    private var stringIndex: [String: Int64] = ["": 0]
    private var sampleTypes: [[UInt8]] = []
    private var samples: [[UInt8]] = []
    private var locations: [[UInt8]] = []
    private var functions: [[UInt8]] = []
    private var locationIDs: [String: UInt64] = [:]

    mutating func string(_ text: String) -> Int64 {
        if let index = stringIndex[text] { return index }
        let index = Int64(strings.count)
        strings.append(text)
        stringIndex[text] = index
        return index
    }

    mutating func sampleType(_ type: String, _ unit: String) {
        var valueType = _Protobuf()
        valueType.int(1, string(type))
        valueType.int(2, string(unit))
        sampleTypes.append(valueType.bytes)
    }

    /// The location of a frame named `function` at `file`:`line`; one per distinct frame.
    mutating func location(function name: String, file: String, line: Int) -> UInt64 {
        let key = "\(name)\u{0}\(file)\u{0}\(line)"
        if let id = locationIDs[key] { return id }
        let id = UInt64(locationIDs.count + 1)
        locationIDs[key] = id
        var function = _Protobuf()
        function.int(1, Int64(id))
        function.int(2, string(name))
        function.int(3, string(name))
        function.int(4, string(file))
        function.int(5, Int64(line))
        functions.append(function.bytes)
        var lineMessage = _Protobuf()
        lineMessage.int(1, Int64(id))
        lineMessage.int(2, Int64(line))
        var location = _Protobuf()
        location.int(1, Int64(id))
        location.message(4, lineMessage.bytes)
        locations.append(location.bytes)
        return id
    }

    mutating func sample(locations ids: [UInt64], values: [Int], labels: [(String, String)]) {
        var sample = _Protobuf()
        sample.packed(1, ids.map { Int64(bitPattern: $0) })
        sample.packed(2, values.map { Int64($0) })
        for (key, value) in labels {
            var label = _Protobuf()
            label.int(1, string(key))
            label.int(2, string(value))
            sample.message(3, label.bytes)
        }
        samples.append(sample.bytes)
    }

    mutating func encoded(timeNanos: Int64, durationNanos: Int64, period: Int64) -> [UInt8] {
        var periodType = _Protobuf()
        periodType.int(1, string("contentions"))
        periodType.int(2, string("count"))
        var profile = _Protobuf()
        for sampleType in sampleTypes { profile.message(1, sampleType) }
        for sample in samples { profile.message(2, sample) }
        for location in locations { profile.message(4, location) }
        for function in functions { profile.message(5, function) }
        for text in strings { profile.message(6, Array(text.utf8)) }
        profile.int(9, timeNanos)
        profile.int(10, durationNanos)
        profile.message(11, periodType.bytes)
        profile.int(12, period)
        return profile.bytes
    }
}

/// Protobuf's wire format, the parts pprof needs: varint fields, packed varints and
/// length-delimited fields. Zero-valued scalars are left out, as proto3 does.
struct _Protobuf {
    private(set) var bytes: [UInt8] = []

    private mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(value & 0x7F) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func int(_ field: Int, _ value: Int64) {
        guard value != 0 else { return }
        varint(UInt64(field) << 3)
        varint(UInt64(bitPattern: value))
    }

    mutating func message(_ field: Int, _ body: [UInt8]) {
        varint(UInt64(field) << 3 | 2)
        varint(UInt64(body.count))
        bytes += body
    }

    mutating func packed(_ field: Int, _ values: [Int64]) {
        var body = _Protobuf()
        for value in values { body.varint(UInt64(bitPattern: value)) }
        message(field, body.bytes)
    }
}

// MARK: - gzip

/// `bytes` as a gzip member (RFC 1952), compressed with the system's zlib when it can be loaded.
///
/// Foundation has no gzip on Linux, and the packages in reach that do (compress-nio) bring SwiftNIO
/// into every program that uses Exclusion; zlib itself is on every system, so it is loaded at run
/// time (its one-shot `compress2` and `crc32`), without a build dependency on its headers. Where
/// it can't be loaded, the data goes into stored (uncompressed) deflate blocks, which every gzip
/// reader accepts as well.
func _gzip(_ bytes: [UInt8]) -> Data {
    var out: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, 0, 0xFF]
    out += _Zlib.shared?.rawDeflate(bytes) ?? _storedDeflate(bytes)
    let crc = _Zlib.shared?.crc32(bytes) ?? _crc32(bytes)
    for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: crc >> UInt32(shift))) }
    let size = UInt32(truncatingIfNeeded: bytes.count)
    for shift in stride(from: 0, to: 32, by: 8) { out.append(UInt8(truncatingIfNeeded: size >> UInt32(shift))) }
    return Data(out)
}

/// Deflate's stored blocks: the bytes as they are, 65,535 at a time.
private func _storedDeflate(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var start = 0
    repeat {
        let end = min(bytes.count, start + 65_535)
        let length = UInt16(end - start)
        out.append(end == bytes.count ? 1 : 0)
        out += [UInt8(length & 0xFF), UInt8(length >> 8), UInt8(~length & 0xFF), UInt8(~length >> 8)]
        out += bytes[start..<end]
        start = end
    } while start < bytes.count
    return out
}

/// CRC-32 (IEEE), bit by bit: only for the stored fallback.
private func _crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}

/// The system's zlib, loaded at run time.
struct _Zlib: @unchecked Sendable {
    // @unchecked: two C function pointers, immutable once loaded; zlib's one-shot functions keep
    // no state between calls.
    private typealias Compress2 =
        @convention(c) (
            UnsafeMutablePointer<UInt8>?, UnsafeMutablePointer<UInt>?, UnsafePointer<UInt8>?, UInt, Int32
        ) -> Int32
    private typealias CRC32 = @convention(c) (UInt, UnsafePointer<UInt8>?, UInt32) -> UInt

    private let compress2: Compress2
    private let crc: CRC32

    static let shared: _Zlib? = {
        #if canImport(Darwin)
        let names = ["libz.dylib", "/usr/lib/libz.dylib"]
        #else
        let names = ["libz.so.1", "libz.so"]
        #endif
        for name in names {
            guard let handle = dlopen(name, RTLD_NOW | RTLD_LOCAL),
                let compress = dlsym(handle, "compress2"), let crc = dlsym(handle, "crc32")
            else { continue }
            return _Zlib(
                compress2: unsafeBitCast(compress, to: Compress2.self), crc: unsafeBitCast(crc, to: CRC32.self))
        }
        return nil
    }()

    /// Raw deflate data: zlib's format without its 2-byte header and 4-byte checksum.
    func rawDeflate(_ bytes: [UInt8]) -> [UInt8]? {
        var capacity = UInt(bytes.count + bytes.count / 1_000 + 64)
        var out = [UInt8](repeating: 0, count: Int(capacity))
        let status = out.withUnsafeMutableBufferPointer { out in
            bytes.withUnsafeBufferPointer { input in
                compress2(out.baseAddress, &capacity, input.baseAddress, UInt(input.count), 9)
            }
        }
        guard status == 0, capacity >= 6 else { return nil }
        return Array(out[2..<(Int(capacity) - 4)])
    }

    func crc32(_ bytes: [UInt8]) -> UInt32 {
        UInt32(truncatingIfNeeded: bytes.withUnsafeBufferPointer { crc(0, $0.baseAddress, UInt32($0.count)) })
    }
}

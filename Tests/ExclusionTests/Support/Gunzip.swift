import Foundation

// The contention profile's pprof file is gzip data. The tests read it with the system's `gzip` where
// they can start a process; on Apple's platforms without processes (iOS) with Foundation, whose
// inflater reads raw DEFLATE data but no gzip container, so the container is read here. Elsewhere
// there is neither, and the tests that decode are left out.

/// Why gzip data couldn't be decompressed.
enum GzipError: Error {
    case notGzip
    case truncated
    case checksumMismatch
}

#if CHILD_PROCESSES
/// Decompresses gzip data.
func gunzip(_ data: Data) throws -> [UInt8] { try gunzipWithTheGzipTool(data) }
#elseif canImport(Darwin)
/// Decompresses gzip data.
func gunzip(_ data: Data) throws -> [UInt8] { try gunzipWithFoundation(data) }
#endif

#if CHILD_PROCESSES
/// Decompresses gzip data with the system's `gzip`.
func gunzipWithTheGzipTool(_ data: Data) throws -> [UInt8] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["gzip", "-dc"]
    let input = Pipe()
    let output = Pipe()
    process.standardInput = input
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    input.fileHandleForWriting.write(data)
    try input.fileHandleForWriting.close()
    let bytes = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw GzipError.notGzip }
    return Array(bytes)
}
#endif

#if canImport(Darwin)
/// Decompresses one gzip member (RFC 1952) with Foundation: the DEFLATE data between its header and
/// its trailer is inflated by `NSData`'s `.zlib`, which Apple documents as raw DEFLATE (RFC 1951),
/// and what comes out is checked against the trailer's CRC-32 and length, so data cut short or
/// damaged is refused however the inflater takes it.
func gunzipWithFoundation(_ data: Data) throws -> [UInt8] {
    let bytes = [UInt8](data)
    let deflated = try deflateData(ofGzipMember: bytes)
    let compressed = Data(bytes[deflated]) as NSData
    let inflated = [UInt8](try compressed.decompressed(using: .zlib) as Data)
    let trailer = bytes[deflated.upperBound...]
    guard crc32(inflated) == littleEndian(trailer.prefix(4)),
        UInt32(truncatingIfNeeded: inflated.count) == littleEndian(trailer.suffix(4))
    else { throw GzipError.checksumMismatch }
    return inflated
}

/// Where the DEFLATE data of the gzip member `bytes` lies: after the 10-byte header and the
/// optional fields its flags announce, before the 8-byte trailer.
private func deflateData(ofGzipMember bytes: [UInt8]) throws -> Range<Int> {
    guard bytes.count >= 18, bytes[0] == 0x1F, bytes[1] == 0x8B, bytes[2] == 8 else { throw GzipError.notGzip }
    let flags = GzipFlags(rawValue: bytes[3])
    guard GzipFlags.all.isSuperset(of: flags) else { throw GzipError.notGzip }
    let end = bytes.count - 8
    var index = 10
    if flags.contains(.extra) {
        guard index + 2 <= end else { throw GzipError.truncated }
        index += 2 + Int(littleEndian(bytes[index..<index + 2]))
    }
    for field in [GzipFlags.name, .comment] where flags.contains(field) {
        // A zero-terminated string.
        guard let zero = bytes[min(index, end)..<end].firstIndex(of: 0) else { throw GzipError.truncated }
        index = zero + 1
    }
    if flags.contains(.headerCRC) { index += 2 }
    guard index <= end else { throw GzipError.truncated }
    return index..<end
}

/// The flags of a gzip header (RFC 1952, 2.3.1): which optional fields follow its first 10 bytes.
private struct GzipFlags: OptionSet {
    let rawValue: UInt8
    static let text = Self(rawValue: 1)
    static let headerCRC = Self(rawValue: 2)
    static let extra = Self(rawValue: 4)
    static let name = Self(rawValue: 8)
    static let comment = Self(rawValue: 16)
    /// The others are reserved: a header with one of them set is not one this reader knows.
    static let all: Self = [.text, .headerCRC, .extra, .name, .comment]
}

/// The little-endian number in `bytes` (at most four).
private func littleEndian(_ bytes: ArraySlice<UInt8>) -> UInt32 {
    bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
}

/// The CRC-32 of gzip's trailer (ISO 3309, as zlib's `crc32`).
private func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}
#endif

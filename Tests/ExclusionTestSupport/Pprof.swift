import Foundation

// Where the tests can decompress gzip (Gunzip.swift).
#if CHILD_PROCESSES || canImport(Darwin)
public enum PprofError: Error, Equatable {
    case truncated
    case badWireType(Int)
    case badIndex
    /// What Go's reader (`profile.Parse`, then `CheckValid`) refuses in a well-formed message.
    case invalid(String)
}

/// The parts of a pprof `Profile` the tests look at, read with a protobuf reader of its own (so
/// that the library's writer isn't checked against itself).
///
/// It refuses what Go's reader refuses, the reader that `go tool pprof` and most viewers build on:
/// a string table that doesn't start with "", a string index out of range, a sample with another
/// number of values than there are sample types, an id of 0 (profile.proto reserves it) or one used
/// twice, and a reference to a location or function that isn't there.
public struct Pprof {
    public struct Sample {
        public var frames: [String] = []
        public var lines: [Int] = []
        public var values: [Int64] = []
        public var labels: [String: String] = [:]
    }

    public var sampleTypes: [[String]] = []
    public var samples: [Sample] = []

    public init(gzipped data: Data) throws {
        try self.init(protobuf: try gunzip(data))
    }

    public init(protobuf bytes: [UInt8]) throws {
        var strings: [String] = []
        var types: [(Int, Int)] = []
        var rawSamples: [(locations: [UInt64], values: [Int64], labels: [(Int, Int)])] = []
        var locations: [UInt64: (function: UInt64, line: Int)] = [:]
        var functions: [UInt64: Int] = [:]
        var mappings: Set<UInt64> = []
        try Self.fields(bytes[...]) { field, value, body in
            switch field {
            case 1:
                var type = (0, 0)
                try Self.fields(body) { field, value, _ in
                    if field == 1 { type.0 = Int(value) } else if field == 2 { type.1 = Int(value) }
                }
                types.append(type)
            case 2:
                var sample: (locations: [UInt64], values: [Int64], labels: [(Int, Int)]) = ([], [], [])
                try Self.fields(body) { field, _, body in
                    switch field {
                    case 1: sample.locations = try Self.packed(body).map { UInt64(bitPattern: $0) }
                    case 2: sample.values = try Self.packed(body)
                    case 3:
                        var label = (0, 0)
                        try Self.fields(body) { field, value, _ in
                            if field == 1 { label.0 = Int(value) } else if field == 2 { label.1 = Int(value) }
                        }
                        sample.labels.append(label)
                    default: break
                    }
                }
                rawSamples.append(sample)
            case 3:
                var id: UInt64 = 0
                try Self.fields(body) { field, value, _ in if field == 1 { id = UInt64(bitPattern: value) } }
                guard id != 0 else { throw PprofError.invalid("a mapping with the reserved id 0") }
                guard mappings.insert(id).inserted else { throw PprofError.invalid("two mappings with id \(id)") }
            case 4:
                var id: UInt64 = 0
                var line = (function: UInt64(0), line: 0)
                try Self.fields(body) { field, value, body in
                    if field == 1 { id = UInt64(bitPattern: value) }
                    if field == 4 {
                        try Self.fields(body) { field, value, _ in
                            if field == 1 { line.function = UInt64(bitPattern: value) }
                            if field == 2 { line.line = Int(value) }
                        }
                    }
                }
                guard id != 0 else { throw PprofError.invalid("a location with the reserved id 0") }
                guard locations[id] == nil else { throw PprofError.invalid("two locations with id \(id)") }
                locations[id] = line
            case 5:
                var id: UInt64 = 0
                var name = 0
                try Self.fields(body) { field, value, _ in
                    if field == 1 { id = UInt64(bitPattern: value) } else if field == 2 { name = Int(value) }
                }
                guard id != 0 else { throw PprofError.invalid("a function with the reserved id 0") }
                guard functions[id] == nil else { throw PprofError.invalid("two functions with id \(id)") }
                functions[id] = name
            case 6: strings.append(String(decoding: body, as: UTF8.self))
            default: break
            }
        }
        guard strings.first == "" else { throw PprofError.invalid("a string table that doesn't start with \"\"") }
        func string(_ index: Int) throws -> String {
            guard strings.indices.contains(index) else { throw PprofError.badIndex }
            return strings[index]
        }
        for (id, location) in locations where location.function != 0 && functions[location.function] == nil {
            throw PprofError.invalid("location \(id) names function \(location.function), which isn't there")
        }
        sampleTypes = try types.map { [try string($0.0), try string($0.1)] }
        samples = try rawSamples.map { raw in
            guard raw.values.count == types.count else {
                throw PprofError.invalid("a sample with \(raw.values.count) values for \(types.count) sample types")
            }
            var sample = Sample(values: raw.values)
            for id in raw.locations {
                guard let location = locations[id] else {
                    throw PprofError.invalid("a sample names location \(id), which isn't there")
                }
                guard let name = functions[location.function] else { throw PprofError.badIndex }
                sample.frames.append(try string(name))
                sample.lines.append(location.line)
            }
            for (key, value) in raw.labels { sample.labels[try string(key)] = try string(value) }
            return sample
        }
    }

    /// Calls `body(field, varint value, length-delimited body)` for each field of a message.
    private static func fields(
        _ bytes: ArraySlice<UInt8>, _ body: (Int, Int64, ArraySlice<UInt8>) throws -> Void
    ) throws {
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let key = try varint(bytes, &index)
            switch key & 7 {
            case 0: try body(Int(key >> 3), Int64(bitPattern: try varint(bytes, &index)), [])
            case 2:
                let length = Int(try varint(bytes, &index))
                guard length >= 0, bytes.endIndex - index >= length else { throw PprofError.truncated }
                try body(Int(key >> 3), 0, bytes[index..<index + length])
                index += length
            default: throw PprofError.badWireType(Int(key & 7))
            }
        }
    }

    private static func packed(_ bytes: ArraySlice<UInt8>) throws -> [Int64] {
        var index = bytes.startIndex
        var values: [Int64] = []
        while index < bytes.endIndex { values.append(Int64(bitPattern: try varint(bytes, &index))) }
        return values
    }

    private static func varint(_ bytes: ArraySlice<UInt8>, _ index: inout Int) throws -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            guard index < bytes.endIndex, shift < 64 else { throw PprofError.truncated }
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return value }
            shift += 7
        }
    }
}
#endif

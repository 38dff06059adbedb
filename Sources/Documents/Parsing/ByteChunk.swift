/// Eight bytes tested at once, for the parsers' hottest loops: each test returns a mask with a
/// byte's high bit set where that byte passes. Written by hand because no package here offers
/// byte-wise SIMD tests; each test works on every byte value, and no carry crosses a byte.
struct ByteChunk {
    static let highBits: UInt64 = 0x8080_8080_8080_8080
    private static let lowBits: UInt64 = 0x7F7F_7F7F_7F7F_7F7F
    private static let ones: UInt64 = 0x0101_0101_0101_0101

    /// The eight bytes, the first in the lowest byte.
    let bits: UInt64

    /// The eight bytes from `pointer` on; the caller makes sure there are eight.
    init(at pointer: UnsafePointer<UInt8>) {
        bits = UInt64(littleEndian: UnsafeRawPointer(pointer).loadUnaligned(as: UInt64.self))
    }

    init(bits: UInt64) {
        self.bits = bits
    }

    var isASCII: Bool { bits & Self.highBits == 0 }

    /// Bytes equal to `byte`: those where `bits ^ byte…` is zero. A byte's low seven bits plus
    /// 0x7F reach its high bit exactly when one of them is set.
    func equal(to byte: UInt8) -> UInt64 {
        let flipped = bits ^ (UInt64(byte) &* Self.ones)
        return ~((flipped & Self.lowBits) &+ Self.lowBits | flipped) & Self.highBits
    }

    /// Bytes below `limit` (at most 0x80): a byte's low seven bits plus `0x80 - limit` reach its
    /// high bit exactly when they are at least `limit`.
    func below(_ limit: UInt8) -> UInt64 {
        ~((bits & Self.lowBits) &+ (UInt64(0x80 - limit) &* Self.ones) | bits) & Self.highBits
    }

    /// ASCII whitespace: U+0009 through U+000D, and U+0020.
    var whitespace: UInt64 {
        equal(to: 0x20) | below(0x0E) & ~below(0x09)
    }
}

/// Hexadecimal, the one codec of the product: device tokens in `:path` and token files, digests,
/// replica identities, UUIDs, JSON's `\u00XX` and the API's `%XX`. The digit tables are written here
/// and nowhere else (`Tests/SourceRuleTests` checks it). The pointer forms are `@inlinable` and
/// allocate nothing, for the per-push `:path` of `LoopSender`.
public enum Hex {
    /// The digit for the low four bits of `nibble`.
    @inlinable @inline(__always)
    public static func digit(_ nibble: UInt8, uppercase: Bool = false) -> UInt8 {
        // StaticString: the table is in the binary's constant data, no lazy global, no heap.
        let table: StaticString = uppercase ? "0123456789ABCDEF" : "0123456789abcdef"
        return table.utf8Start[Int(nibble & 0x0f)]
    }

    /// The value of one hex digit (either case), or nil when `byte` is not one.
    @inlinable @inline(__always)
    public static func value(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte &- UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte &- UInt8(ascii: "a") &+ 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte &- UInt8(ascii: "A") &+ 10
        default: return nil
        }
    }

    /// Writes the 2 × `bytes.count` digits of `bytes` at `destination` and returns how many.
    @inlinable
    public static func write(_ bytes: UnsafeRawBufferPointer, to destination: UnsafeMutablePointer<UInt8>,
                             uppercase: Bool = false) -> Int {
        for index in 0..<bytes.count {
            destination[2 &* index] = digit(bytes[index] >> 4, uppercase: uppercase)
            destination[2 &* index &+ 1] = digit(bytes[index], uppercase: uppercase)
        }
        return bytes.count &* 2
    }

    /// Appends the two digits of `byte` to `out`.
    @inlinable
    public static func append(_ byte: UInt8, to out: inout [UInt8], uppercase: Bool = false) {
        out.append(digit(byte >> 4, uppercase: uppercase))
        out.append(digit(byte, uppercase: uppercase))
    }

    /// Appends the digits of every byte of `bytes` to `out`.
    @inlinable
    public static func append<Bytes: Sequence>(contentsOf bytes: Bytes, to out: inout [UInt8], uppercase: Bool = false)
        where Bytes.Element == UInt8 {
        for byte in bytes { append(byte, to: &out, uppercase: uppercase) }
    }

    /// `bytes` as lowercase (or uppercase) hex text.
    public static func encode<Bytes: Sequence>(_ bytes: Bytes, uppercase: Bool = false) -> String where Bytes.Element == UInt8 {
        var out = [UInt8]()
        out.reserveCapacity(bytes.underestimatedCount * 2)
        append(contentsOf: bytes, to: &out, uppercase: uppercase)
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes the even-length digits (either case) in `digits` into `destination`, which holds
    /// `digits.count / 2` bytes. False, with `destination` partly written, when a digit is not hex.
    @inlinable
    public static func decode(_ digits: UnsafeRawBufferPointer, into destination: UnsafeMutableRawBufferPointer) -> Bool {
        precondition(digits.count % 2 == 0 && destination.count >= digits.count / 2, "Hex.decode: odd digits or short destination")
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index &+ 1]) else { return false }
            destination[index / 2] = high << 4 | low
            index &+= 2
        }
        return true
    }

    /// The bytes of an even-length hexadecimal string (either case), or nil if it is not one.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var out = [UInt8](repeating: 0, count: utf8.count / 2)
        let ok = utf8.withUnsafeBytes { digits in out.withUnsafeMutableBytes { decode(digits, into: $0) } }
        return ok ? out : nil
    }
}

import APNs
import Vocabulary

/// A device token's raw bytes stored inline (no heap), up to `capacity` bytes. APNs tokens are 32
/// bytes today, but Apple says not to assume a length, so this holds as many as any token Sokuho
/// accepts (`DeviceToken.maximumByteCount`); the 13-word storage below fits 104.
public struct DeviceTokenBytes: Sendable, Equatable {
    public static let capacity = DeviceToken.maximumByteCount
    private var storage: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) =
        (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
    public private(set) var count: UInt8 = 0

    public init() {}

    /// The token from raw bytes; nil when it is empty or longer than `capacity`.
    public init?<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        // Arrays and slices (what the store and the fan-out hand over) take the copy below; the
        // element-by-element loop is for other collections only.
        if let made = bytes.withContiguousStorageIfAvailable({ DeviceTokenBytes(UnsafeRawBufferPointer($0)) }) {
            guard let made else { return nil }
            self = made
            return
        }
        guard !bytes.isEmpty, bytes.count <= Self.capacity else { return nil }
        count = UInt8(bytes.count)
        withUnsafeMutableBytes(of: &storage) { raw in
            for (index, byte) in bytes.enumerated() { raw[index] = byte }
        }
    }

    /// The token from raw bytes, copied in one go (the fan-out's per-target path: no generics).
    public init?(_ raw: UnsafeRawBufferPointer) {
        guard raw.count > 0, raw.count <= Self.capacity else { return nil }
        count = UInt8(raw.count)
        withUnsafeMutableBytes(of: &storage) { $0.baseAddress!.copyMemory(from: raw.baseAddress!, byteCount: raw.count) }
    }

    /// The token from its hexadecimal text (either case); nil when it is not even-length hex or too long.
    public init?(hex: some StringProtocol) {
        let utf8 = Array(hex.utf8)
        guard !utf8.isEmpty, utf8.count % 2 == 0, utf8.count / 2 <= Self.capacity else { return nil }
        let ok = utf8.withUnsafeBytes { digits in withUnsafeMutableBytes(of: &storage) { Hex.decode(digits, into: $0) } }
        guard ok else { return nil }
        count = UInt8(utf8.count / 2)
    }

    /// Writes `value` big-endian over bytes `offset..<offset+8` (which must lie inside the token):
    /// a cheap way to derive many distinct tokens from one template.
    public mutating func overwrite(at offset: Int, bigEndian value: UInt64) {
        precondition(offset >= 0 && offset + 8 <= Int(count), "overwrite outside the token")
        withUnsafeMutableBytes(of: &storage) { raw in
            for index in 0..<8 { raw[offset + index] = UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64(index))) }
        }
    }

    /// Calls `body` with the raw bytes.
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeBytes(of: storage) { body(UnsafeRawBufferPointer(rebasing: $0[0..<Int(count)])) }
    }

    /// Writes the lowercase hex form at `destination` (2 × count bytes) and returns its length.
    @inline(__always)
    func writeHex(to destination: UnsafeMutablePointer<UInt8>) -> Int {
        withBytes { Hex.write($0, to: destination) }
    }

    public var hex: String {
        var out = [UInt8](repeating: 0, count: Int(count) * 2)
        _ = out.withUnsafeMutableBufferPointer { writeHex(to: $0.baseAddress!) }
        return String(decoding: out, as: UTF8.self)
    }

    /// The last 8 hex characters, the only part of a token that may appear in a log.
    public var redacted: String { "…" + hex.suffix(8) }

    public static func == (lhs: DeviceTokenBytes, rhs: DeviceTokenBytes) -> Bool {
        lhs.count == rhs.count && lhs.withBytes { a in rhs.withBytes { b in a.elementsEqual(b) } }
    }
}

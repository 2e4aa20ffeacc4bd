/// A push token's raw bytes, the one token type of the product: an APNs device, push-to-start or
/// Live Activity update token today, and an FCM registration token next (Android). It lives here,
/// below every module that handles tokens (APNs parses them, the store checks them, the sender and
/// the fan-out copy them into jobs and windows, the simulator checks what it is sent), so each
/// length bound and the inline storage are written once (`Tests/SourceRuleTests` checks it).
///
/// The bytes are stored inline, no heap: a token is copied into every `PushJob` and scan-window
/// entry, so a fan-out of a million tokens allocates nothing per push. The storage holds the
/// longest token of any kind (an FCM token, up to 255 bytes) plus its count in the last byte: 256
/// bytes in all, four cache lines, so one layout serves both services. Against the 105-byte layout
/// it replaced (`PushJob` about 152 → 296 bytes), measured with `sokuho bench` on loopback nginx:
/// still no allocation per push, CPU per push within the noise (median +2%, pairs 0.93–1.07×), and
/// about 5.7 MiB more resident per loop thread for the job rings it preallocates — a fixed cost, so
/// the simpler layout (no token referenced out of a window, no second storage) was kept.
///
/// `description` is the redacted form: interpolating a token into a log line never prints it whole.
public struct DeviceToken: Sendable, BitwiseCopyable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    // MARK: The bounds, each written here once

    /// The most bytes any token kind has: an FCM registration token's 255. The storage holds this
    /// many, and one more byte for the count.
    public static let capacity = 255
    /// An APNs token (device, push-to-start, update): 1...100 bytes. Apple says not to assume a
    /// length; 100 is three times today's 32 bytes and keeps the `:path` far below the 8 KB
    /// header-list limit. Every parser takes what this allows, so a token `send` takes is one the
    /// store takes too (above its minimum).
    public static let apnsByteCount = 1...100
    /// An APNs token the store keeps: at least 8 bytes (shorter is garbage, not a token), at most
    /// what every parser takes.
    public static let storedAPNsByteCount = 8...apnsByteCount.upperBound
    /// What APNs issues today, 32 bytes: the simulator answers BadDeviceToken below it (its
    /// stricter reading, so a sender that truncates tokens fails there), and benchmarks make tokens
    /// of this length. The sender sets no such minimum, as Apple advises.
    public static let issuedAPNsByteCount = 32
    /// An FCM registration token: 1...255 bytes of `[A-Za-z0-9_:-]` text, stored as its bytes.
    /// Ready for the Android work; nothing sends to FCM yet.
    public static let fcmByteCount = 1...capacity

    // MARK: Storage

    /// 32 words: bytes 0..<255 the token (zero past `count`), byte 255 the count.
    @usableFromInline typealias Words = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                         UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                         UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                                         UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
    @usableFromInline var words: Words = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)

    /// The number of bytes (0 only for `init()`, the absent token).
    @inlinable public var count: Int {
        withUnsafeBytes(of: words) { Int($0[DeviceToken.capacity]) }
    }

    /// No token: a request whose `:path` is its prefix alone, an empty window slot.
    public init() {}

    /// The token from raw bytes, copied in one go (the fan-out's per-target path: no generics);
    /// nil when it is empty or longer than `capacity`. Kinds' bounds are their parsers' to check.
    public init?(_ raw: UnsafeRawBufferPointer) {
        guard raw.count > 0, raw.count <= Self.capacity else { return nil }
        withUnsafeMutableBytes(of: &words) { storage in
            storage.baseAddress!.copyMemory(from: raw.baseAddress!, byteCount: raw.count)
            storage[Self.capacity] = UInt8(raw.count)
        }
    }

    /// The token from raw bytes; nil when it is empty or longer than `capacity`.
    public init?<Bytes: Collection>(bytes: Bytes) where Bytes.Element == UInt8 {
        // Arrays and slices (what the store and the fan-out hand over) take the copy above; the
        // element-by-element loop is for other collections only.
        if let made = bytes.withContiguousStorageIfAvailable({ DeviceToken(UnsafeRawBufferPointer($0)) }) {
            guard let made else { return nil }
            self = made
            return
        }
        guard !bytes.isEmpty, bytes.count <= Self.capacity else { return nil }
        withUnsafeMutableBytes(of: &words) { storage in
            for (index, byte) in bytes.enumerated() { storage[index] = byte }
            storage[Self.capacity] = UInt8(bytes.count)
        }
    }

    /// The token from its hexadecimal digits (either case), through the one `Hex` codec; nil when
    /// they are not even-length hex of 1...`capacity` bytes. A kind's own parser (APNs'
    /// `DeviceToken(hex:)`) checks its bound first and says what is wrong.
    public init?(hexDigits text: some StringProtocol) {
        var text = String(text)
        let decoded = text.withUTF8 { digits -> Bool in
            guard digits.count > 0, digits.count % 2 == 0, digits.count / 2 <= Self.capacity else { return false }
            return withUnsafeMutableBytes(of: &words) { storage in
                guard Hex.decode(UnsafeRawBufferPointer(digits), into: storage) else { return false }
                storage[Self.capacity] = UInt8(digits.count / 2)
                return true
            }
        }
        guard decoded else { return nil }
    }

    /// Whether `text` is an FCM registration token: `fcmByteCount` bytes of `[A-Za-z0-9_:-]`.
    public static func isFCMRegistrationToken(_ text: some StringProtocol) -> Bool {
        // The bytes in place when the text has them (a native String or Substring does): this is
        // per message in the simulator, and a generic walk over another module's UTF8View costs
        // a witness call per byte.
        if let verdict = text.utf8.withContiguousStorageIfAvailable({ isFCMRegistrationToken(bytes: UnsafeRawBufferPointer($0)) }) {
            return verdict
        }
        return Array(text.utf8).withUnsafeBytes { isFCMRegistrationToken(bytes: $0) }
    }

    /// Whether `bytes` are an FCM registration token's text (see the String form).
    public static func isFCMRegistrationToken(bytes: UnsafeRawBufferPointer) -> Bool {
        guard fcmByteCount.contains(bytes.count) else { return false }
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "-"): continue
            default: return false
            }
        }
        return true
    }

    // MARK: Reading and writing

    /// Calls `body` with the token's bytes.
    @inlinable
    public func withBytes<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R {
        withUnsafeBytes(of: words) { body(UnsafeRawBufferPointer(rebasing: $0[0..<Int($0[DeviceToken.capacity])])) }
    }

    /// Writes the lowercase hex form at `destination` (2 × count bytes) and returns its length:
    /// the sender's per-push `:path`, written into its own buffer without an allocation.
    @inlinable @inline(__always)
    public func writeHex(to destination: UnsafeMutablePointer<UInt8>) -> Int {
        withBytes { Hex.write($0, to: destination) }
    }

    /// Writes `value` big-endian over bytes `offset..<offset+8` (which must lie inside the token):
    /// a cheap way to derive many distinct tokens from one template (benchmarks, tests).
    public mutating func overwrite(at offset: Int, bigEndian value: UInt64) {
        precondition(offset >= 0 && offset + 8 <= count, "overwrite outside the token")
        withUnsafeMutableBytes(of: &words) { storage in
            for index in 0..<8 { storage[offset + index] = UInt8(truncatingIfNeeded: value >> (56 - 8 * UInt64(index))) }
        }
    }

    /// The token in lower-case hex (one spelling per token, as the store's files write it).
    public var hex: String {
        withBytes { Hex.encode($0) }
    }

    /// The last 8 hex characters behind an ellipsis: enough to tell tokens apart in a log, useless
    /// to push to. The only part of a token that may appear in a log.
    public var redacted: String {
        withBytes { "…" + Hex.encode($0.suffix(4)) }
    }

    public var description: String { redacted }
    public var debugDescription: String { "DeviceToken(\(count) bytes, \(redacted))" }

    // Bytes past `count` are always zero, but compare and hash the token's bytes only: that is
    // what a token is, whatever the storage holds.
    public static func == (lhs: DeviceToken, rhs: DeviceToken) -> Bool {
        lhs.withBytes { a in rhs.withBytes { b in a.count == b.count && a.elementsEqual(b) } }
    }

    public func hash(into hasher: inout Hasher) {
        withBytes { hasher.combine(bytes: $0) }
    }
}

import Vocabulary

/// Writes compact JSON into a byte buffer in the order it is told, with no Foundation: the caller
/// decides key order, and raw fragments (an app's own `content-state`) are embedded byte for byte.
public struct JSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Whether the next member/element needs a leading comma, one entry per open container.
    private var needsComma: [Bool] = []

    public init(reservingCapacity capacity: Int = 256) { bytes.reserveCapacity(capacity) }

    public var string: String { String(decoding: bytes, as: UTF8.self) }

    public mutating func beginObject() { separator(); bytes.append(UInt8(ascii: "{")); needsComma.append(false) }
    public mutating func endObject() { needsComma.removeLast(); bytes.append(UInt8(ascii: "}")) }
    public mutating func beginArray() { separator(); bytes.append(UInt8(ascii: "[")); needsComma.append(false) }
    public mutating func endArray() { needsComma.removeLast(); bytes.append(UInt8(ascii: "]")) }

    /// Writes `"key":` inside an object; the value call that follows writes no comma.
    public mutating func key(_ key: String) {
        separator()
        JSONWriter.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
        pendingValueAfterKey = true
    }

    private var pendingValueAfterKey = false

    public mutating func string(_ value: String) { separator(); JSONWriter.appendQuoted(value, to: &bytes) }
    public mutating func int(_ value: some BinaryInteger) { separator(); bytes.append(contentsOf: Array(String(value).utf8)) }
    public mutating func double(_ value: Double) {
        separator()
        if value.isFinite, value == value.rounded(), abs(value) < 1e15 {
            bytes.append(contentsOf: Array(String(Int64(value)).utf8))
        } else {
            bytes.append(contentsOf: Array(value.description.utf8))
        }
    }
    public mutating func bool(_ value: Bool) { separator(); bytes.append(contentsOf: Array((value ? "true" : "false").utf8)) }
    public mutating func null() { separator(); bytes.append(contentsOf: Array("null".utf8)) }
    /// Embeds already-valid JSON verbatim (the caller has validated it).
    public mutating func raw<Bytes: Sequence>(_ json: Bytes) where Bytes.Element == UInt8 { separator(); bytes.append(contentsOf: json) }
    /// Writes a parsed value (numbers keep their original text).
    public mutating func value(_ value: JSONValue) {
        switch value {
        case .null: null()
        case let .bool(b): bool(b)
        case let .number(text): separator(); bytes.append(contentsOf: Array(text.utf8))
        case let .string(s): string(s)
        case let .array(elements):
            beginArray()
            for element in elements { self.value(element) }
            endArray()
        case let .object(members):
            beginObject()
            for member in members { key(member.key); self.value(member.value) }
            endObject()
        }
    }

    private mutating func separator() {
        if pendingValueAfterKey { pendingValueAfterKey = false; return }
        guard !needsComma.isEmpty else { return }
        if needsComma[needsComma.count - 1] { bytes.append(UInt8(ascii: ",")) }
        needsComma[needsComma.count - 1] = true
    }

    /// Appends `text` as a quoted JSON string (RFC 8259 escapes; non-ASCII passes through as UTF-8).
    public static func appendQuoted(_ text: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(0x5c); out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5c); out.append(0x5c)
            case 0x0a: out.append(0x5c); out.append(UInt8(ascii: "n"))
            case 0x0d: out.append(0x5c); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(0x5c); out.append(UInt8(ascii: "t"))
            case 0..<0x20:
                out.append(contentsOf: [0x5c, UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                Hex.append(byte, to: &out)
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }

    /// `text` as a quoted JSON string.
    public static func quoted(_ text: String) -> String {
        var out = [UInt8]()
        appendQuoted(text, to: &out)
        return String(decoding: out, as: UTF8.self)
    }
}

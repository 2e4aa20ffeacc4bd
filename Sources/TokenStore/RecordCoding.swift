import APNs
/// The byte layout of stored records: fixed-width big-endian integers and length-prefixed byte
/// strings (LEB128 lengths). Big-endian so that numeric keys sort in numeric order.
struct RecordWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 64) { bytes.reserveCapacity(capacity) }

    mutating func uint8(_ value: UInt8) { bytes.append(value) }

    mutating func uint32(_ value: UInt32) {
        for shift in stride(from: 24, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
    }

    mutating func uint64(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    mutating func length(_ value: Int) { varint(UInt64(value)) }

    /// LEB128: a time in milliseconds since 1970 takes 6 bytes instead of 8, a small difference 1.
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 { bytes.append(UInt8(rest & 0x7f) | 0x80); rest >>= 7 }
        bytes.append(UInt8(rest))
    }

    mutating func data(_ value: [UInt8]) { length(value.count); bytes.append(contentsOf: value) }
    mutating func string(_ value: String) { length(value.utf8.count); bytes.append(contentsOf: value.utf8) }
}

/// Reads what `RecordWriter` wrote; any overrun or bad UTF-8 is a corrupt record.
struct RecordReader {
    private let buffer: UnsafeRawBufferPointer
    private var offset = 0
    private let what: String

    /// `what` names the record for the error message ("installation 'abc'").
    init(_ buffer: UnsafeRawBufferPointer, what: String) {
        self.buffer = buffer
        self.what = what
    }

    var isAtEnd: Bool { offset == buffer.count }

    private func corrupt() -> StoreError { .corrupt(path: "", detail: "\(what) is truncated or malformed") }

    mutating func uint8() throws(StoreError) -> UInt8 {
        guard offset < buffer.count else { throw corrupt() }
        defer { offset += 1 }
        return buffer[offset]
    }

    mutating func uint32() throws(StoreError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 { value = value << 8 | UInt32(try uint8()) }
        return value
    }

    mutating func uint64() throws(StoreError) -> UInt64 {
        var value: UInt64 = 0
        for _ in 0..<8 { value = value << 8 | UInt64(try uint8()) }
        return value
    }

    mutating func length() throws(StoreError) -> Int {
        let value = try varint(maximumBits: 35)
        guard value <= buffer.count - offset else { throw corrupt() }
        return Int(value)
    }

    /// What `RecordWriter.varint` wrote.
    mutating func varint(maximumBits: Int = 64) throws(StoreError) -> UInt64 {
        var value: UInt64 = 0
        var shift = 0
        while true {
            let byte = try uint8()
            value |= UInt64(byte & 0x7f) << UInt64(shift)
            if byte < 0x80 { break }
            shift += 7
            guard shift < maximumBits else { throw corrupt() }
        }
        return value
    }

    /// The bytes not read yet (a record's last field), without a length prefix.
    mutating func rest() -> UnsafeRawBufferPointer {
        defer { offset = buffer.count }
        return UnsafeRawBufferPointer(rebasing: buffer[offset...])
    }

    mutating func data() throws(StoreError) -> [UInt8] {
        let count = try length()
        defer { offset += count }
        return Array(buffer[offset..<offset + count])
    }

    mutating func environment() throws(StoreError) -> Environment {
        guard let environment = Environment(storeByte: try uint8()) else {
            throw StoreError.corrupt(path: "", detail: "\(what) has an unknown environment")
        }
        return environment
    }

    mutating func string() throws(StoreError) -> String {
        let count = try length()
        defer { offset += count }
        guard let text = String(validating: buffer[offset..<offset + count], as: UTF8.self) else { throw corrupt() }
        return text
    }
}

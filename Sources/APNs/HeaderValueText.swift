import Vocabulary

/// Checks shared by every value that ends up in a header or a `:path`: nghttp2 refuses control
/// characters and a stray `/` or space would change the path, so they are refused here with the field's name.
enum HeaderValueText {
    /// Throws unless `text` is non-empty and every byte is in `allowed`. With `quoting: false` (a
    /// device token, which must never appear whole in a message) the error gives the byte and its
    /// position instead of the text.
    static func check(_ text: String, field: String, allowed: (UInt8) -> Bool, expected: String, reason: Reason? = nil,
                      quoting: Bool = true) throws(ValidationError) {
        guard !text.isEmpty else { throw ValidationError(field: field, "is empty; give \(expected)", reason: reason) }
        for (offset, byte) in text.utf8.enumerated() where !allowed(byte) {
            let what = quoting ? "'\(printable(text))' contains '\(printable(byte))'" : "has '\(printable(byte))' at byte \(offset + 1)"
            throw ValidationError(field: field, "\(what); give \(expected)", reason: reason)
        }
    }

    static func isAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a)
    }

    static func isHexDigit(_ byte: UInt8) -> Bool { Hex.value(byte) != nil }

    /// `text` cut to a length fit for an error message, control characters shown as `\u{…}`.
    static func printable(_ text: String) -> String {
        let cut = text.count > 80 ? String(text.prefix(80)) + "…" : text
        return cut.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7f ? "\\u{\(String($0.value, radix: 16))}" : String($0) }.joined()
    }

    static func printable(_ byte: UInt8) -> String {
        byte < 0x20 || byte >= 0x7f ? "\\u{\(String(byte, radix: 16))}" : String(UnicodeScalar(byte))
    }
}

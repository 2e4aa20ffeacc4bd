import JSONCore

/// The app's own JSON objects (`attributes`, `content-state`), which go into the payload byte for
/// byte: re-encoding could reorder keys or rewrite numbers like `1.50` or `1e3`, and the app decodes
/// them with its own `Codable` types. Only the whitespace around the object is dropped.
enum EmbeddedJSONObject {
    /// The bytes of the object in `bytes`, after checking they are exactly one JSON object.
    static func validated(_ bytes: [UInt8], field: String) throws(ValidationError) -> ArraySlice<UInt8> {
        do {
            try JSONParser.validateObject(bytes)
        } catch {
            throw ValidationError(field: field, "is not a JSON object (\(error)); give it as {…}")
        }
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isWhitespace(bytes[start]) { start += 1 }
        while end > start, isWhitespace(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d
    }
}

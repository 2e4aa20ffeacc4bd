import JSONCore

/// The app's own JSON objects (`attributes`, `content-state`), which go into the payload byte for
/// byte: re-encoding could reorder keys or rewrite numbers like `1.50` or `1e3`, and the app decodes
/// them with its own `Codable` types. Only the whitespace around the object is dropped.
enum EmbeddedJSONObject {
    /// The bytes of the object in `bytes`, after checking they are exactly one JSON object.
    static func validated(_ bytes: [UInt8], field: String) throws(ValidationError) -> ArraySlice<UInt8> {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes)
        } catch {
            throw ValidationError(field: field, "is not a JSON object (\(error)); give it as {…}")
        }
        guard value.isObject else { throw ValidationError(field: field, "is not a JSON object; give it as {…}") }
        try decodable(value, at: field)
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, isWhitespace(bytes[start]) { start += 1 }
        while end > start, isWhitespace(bytes[end - 1]) { end -= 1 }
        return bytes[start..<end]
    }

    /// Refuses what valid JSON allows and the phones' decoders do not: a key given twice in one
    /// object (Android's `org.json` throws, and which one `Codable` keeps is not defined) and a
    /// number no `Double` holds (`1e999`: ActivityKit's `JSONDecoder` and Android's parsers throw).
    /// Sent anyway, the phone could not show the activity, and nothing would say why.
    private static func decodable(_ value: JSONValue, at field: String) throws(ValidationError) {
        switch value {
        case let .object(members):
            var keys = Set<String>()
            for (key, member) in members {
                guard keys.insert(key).inserted else {
                    throw ValidationError(field: field, "has the key \"\(key)\" twice; the app's decoder (ActivityKit's Codable, Android's JSON parser) cannot read it: give each key once")
                }
                try decodable(member, at: field + "." + key)
            }
        case let .array(elements):
            for (index, element) in elements.enumerated() { try decodable(element, at: "\(field)[\(index)]") }
        case let .number(text):
            guard let number = Double(text), number.isFinite else {
                throw ValidationError(field: field, "is \(text), a number no decoder on the phone can hold (out of a Double's range); give a smaller number or a string")
            }
        default:
            break
        }
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d
    }
}

import Vocabulary

/// `application/x-www-form-urlencoded` (the WHATWG URL standard's serializer): the body of an OAuth
/// token request. Letters, digits and `*-._` stay; a space is `+`; every other byte is `%XX`
/// (upper-case, through the one `Hex` codec). So `urn:ietf:params:…` travels as `urn%3Aietf%3A…`.
public enum FormEncoding {
    /// `name=value&…` with both sides encoded.
    public static func encode(_ pairs: [(name: String, value: String)]) -> [UInt8] {
        var out: [UInt8] = []
        for (index, pair) in pairs.enumerated() {
            if index > 0 { out.append(UInt8(ascii: "&")) }
            append(pair.name, to: &out)
            out.append(UInt8(ascii: "="))
            append(pair.value, to: &out)
        }
        return out
    }

    /// The pairs of a form body, decoded (`+` is a space, `%XX` a byte); nil when an escape is not
    /// two hex digits or the result is not UTF-8.
    public static func decode(_ body: [UInt8]) -> [(name: String, value: String)]? {
        var pairs: [(name: String, value: String)] = []
        for part in body.split(separator: UInt8(ascii: "&"), omittingEmptySubsequences: true) {
            let equals = part.firstIndex(of: UInt8(ascii: "=")) ?? part.endIndex
            guard let name = unescape(part[..<equals]),
                  let value = unescape(equals == part.endIndex ? [] : part[part.index(after: equals)...]) else { return nil }
            pairs.append((name, value))
        }
        return pairs
    }

    private static func append(_ text: String, to out: inout [UInt8]) {
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "*"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"):
                out.append(byte)
            case UInt8(ascii: " "):
                out.append(UInt8(ascii: "+"))
            default:
                out.append(UInt8(ascii: "%"))
                Hex.append(byte, to: &out, uppercase: true)
            }
        }
    }

    private static func unescape(_ bytes: ArraySlice<UInt8>) -> String? {
        var out: [UInt8] = []
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.endIndex, let high = Hex.value(bytes[index + 1]), let low = Hex.value(bytes[index + 2]) else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(byte == UInt8(ascii: "+") ? UInt8(ascii: " ") : byte)
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}

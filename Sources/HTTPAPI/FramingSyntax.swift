/// The syntax `RequestFraming` checks (RFC 9112): a request head as a whole, a field line, a
/// chunk-size line.
enum FramingSyntax {
    enum BodyFraming { case none, length(Int), chunked }
    struct Head { var requestLine: [UInt8]; var body: BodyFraming; var releasesBody: Bool }

    /// The methods evhttp reads a body for; for any other (HEAD, TRACE, an unknown one) it reads
    /// none, so a body declared there would be read as the next request: this type reads it instead
    /// (framing does not depend on the method, RFC 9112 §6.3) and drops it.
    private static let bodyMethods: Set<String> = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT"]

    static func judge(_ lines: [[UInt8]]) -> Result<Head, FramingRefusal> {
        func bad(_ message: String) -> Result<Head, FramingRefusal> {
            .failure(FramingRefusal(status: 400, code: "invalid_request", message: message))
        }
        let parts = lines[0].split(separator: UInt8(ascii: " "), omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte),
              !parts[1].isEmpty, parts[1].allSatisfy({ $0 > 0x20 && $0 != 0x7F }) else {
            return bad("the request line is not METHOD SP request-target SP HTTP-version")
        }
        let version = Array(parts[2])
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)), isDigit(version[5]),
              version[6] == UInt8(ascii: "."), isDigit(version[7]) else {
            return bad("the request line's version is not HTTP/<digit>.<digit>")
        }
        guard version[5] == UInt8(ascii: "1") else {
            return .failure(FramingRefusal(status: 505, code: "http_version_not_supported",
                                           message: "this server speaks HTTP/1.1 (and 1.0); the request is \(String(decoding: version, as: UTF8.self))"))
        }
        // CONNECT asks for a tunnel, which an API does not give. evhttp answers it without a
        // Content-Length (a 2xx to CONNECT has none) and keeps the connection, so a request
        // pipelined after it was answered after the unframed body: refused here, answered in
        // place of a stand-in and closed, as every refusal is.
        guard parts[0].elementsEqual("CONNECT".utf8) == false else {
            return .failure(FramingRefusal(status: 501, code: "not_implemented", message: "CONNECT is not served: this is an HTTP API, not a proxy"))
        }
        if let (part, problem) = targetProblem(parts[1]) {
            return .failure(FramingRefusal(status: 400, code: part == "query" ? "invalid_query" : "invalid_path", message: problem))
        }
        var lengths: Set<Int> = []
        var transferEncodings: [String] = []
        for line in lines.dropFirst() {
            if let refusal = fieldProblem(line) { return .failure(refusal) }
            let colon = line.firstIndex(of: UInt8(ascii: ":"))!
            let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
            let value = trimmed(line[(colon + 1)...])
            if name == "content-length" {
                guard !value.isEmpty, value.count <= 18, value.allSatisfy(isDigit), let length = Int(String(decoding: value, as: UTF8.self)) else {
                    return bad("Content-Length is not a decimal number of bytes")
                }
                lengths.insert(length)
            } else if name == "transfer-encoding" {
                transferEncodings.append(String(decoding: value, as: UTF8.self).lowercased())
            }
        }
        if lengths.count > 1 || (!lengths.isEmpty && !transferEncodings.isEmpty) {
            return bad("the request has conflicting Content-Length or Transfer-Encoding headers; send exactly one of them")
        }
        let method = String(decoding: parts[0], as: UTF8.self)
        var body = BodyFraming.none
        if !transferEncodings.isEmpty {
            guard transferEncodings == ["chunked"] else {
                return .failure(FramingRefusal(status: 501, code: "not_implemented",
                                               message: "Transfer-Encoding: the only coding this server reads is chunked"))
            }
            body = .chunked
        } else if let length = lengths.first {
            body = .length(length)
        }
        // HTTP/1.x with x > 1 is answered as what this server speaks (RFC 9110 §6.2).
        var requestLine = lines[0]
        if version[7] != UInt8(ascii: "0"), version[7] != UInt8(ascii: "1") { requestLine[requestLine.count - 1] = UInt8(ascii: "1") }
        return .success(Head(requestLine: requestLine, body: body, releasesBody: bodyMethods.contains(method)))
    }

    /// What is wrong with a request target's escapes, or nil: every `%` starts two hex digits,
    /// and what they decode to is UTF-8 — no overlong forms (`%C0%AE` is a disguised "."), no
    /// stray bytes. Decoded by evhttp instead, `%zz` stayed as it was and invalid UTF-8 became
    /// U+FFFD: a 404 for a path nobody asked for, not the 400 the request is.
    /// Returns which part ("path" or "query") and what is wrong.
    static func targetProblem(_ target: ArraySlice<UInt8>) -> (part: String, problem: String)? {
        let question = target.firstIndex(of: UInt8(ascii: "?")) ?? target.endIndex
        for (part, bytes) in [("path", target[..<question]), ("query", target[question...])] {
            var decoded: [UInt8] = []
            decoded.reserveCapacity(bytes.count)
            var index = bytes.startIndex
            while index < bytes.endIndex {
                let byte = bytes[index]
                guard byte == UInt8(ascii: "%") else { decoded.append(byte); index += 1; continue }
                guard index + 2 < bytes.endIndex, let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2]) else {
                    return (part, "the request target's \(part) has a '%' not followed by two hex digits; percent-encode '%' itself as %25")
                }
                decoded.append(high << 4 | low)
                index += 3
            }
            guard String(validating: decoded, as: UTF8.self) != nil else {
                return (part, "the request target's \(part) has percent-escapes that decode to bytes that are not UTF-8 (an overlong or stray byte); encode each character's UTF-8 bytes")
            }
        }
        return nil
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Content-Length or Transfer-Encoding (a field line already judged well-formed).
    static func isFramingField(_ line: [UInt8]) -> Bool {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return false }
        let name = String(decoding: line[..<colon], as: UTF8.self).lowercased()
        return name == "content-length" || name == "transfer-encoding"
    }

    /// What is wrong with a field line (`name: value`), or nil.
    static func fieldProblem(_ line: [UInt8]) -> FramingRefusal? {
        func bad(_ message: String) -> FramingRefusal { FramingRefusal(status: 400, code: "invalid_request", message: message) }
        if line.first == UInt8(ascii: " ") || line.first == UInt8(ascii: "\t") {
            return bad("a header line starts with whitespace (obsolete line folding); send each header on one line")
        }
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return bad("a header line has no colon") }
        let name = line[..<colon]
        if let last = name.last, last == UInt8(ascii: " ") || last == UInt8(ascii: "\t") {
            return bad("whitespace between a header name and its colon (RFC 9112 §5.1)")
        }
        guard !name.isEmpty, name.allSatisfy(isTokenByte) else { return bad("a header name is not a token") }
        let printableName = String(decoding: name, as: UTF8.self)
        guard line[(colon + 1)...].allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
            return bad("header \(printableName) has a control character in its value")
        }
        return nil
    }

    /// `chunk-size [ chunk-ext ]`: the size, or nil. Extensions are checked for control characters
    /// only, then dropped.
    static func chunkSize(_ line: [UInt8]) -> Int? {
        let digits = line.prefix { isHexDigit($0) }
        guard !digits.isEmpty, digits.count <= 15, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else { return nil }
        let rest = line[digits.endIndex...].drop { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard rest.isEmpty || (rest.first == UInt8(ascii: ";") && rest.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) })) else { return nil }
        return size
    }

    private static func trimmed(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        let isSpace = { (byte: UInt8) in byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) }) else { return [] }
        return bytes[first...last]
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        isDigit(byte) || (byte >= 0x41 && byte <= 0x46) || (byte >= 0x61 && byte <= 0x66)
    }

    /// tchar (RFC 9110 §5.6.2).
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        if isDigit(byte) || (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) { return true }
        return Array("!#$%&'*+-.^_`|~".utf8).contains(byte)
    }
}

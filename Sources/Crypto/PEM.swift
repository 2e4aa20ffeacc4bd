import CMbedTLS

/// PEM text around DER (RFC 7468) and the label of the first PEM block in some bytes, so a key loader
/// can say "this is a certificate" instead of a bare parse error.
enum PEM {
    /// `-----BEGIN <label>-----`, base64 in 64-column lines, `-----END <label>-----`, final newline.
    static func encode(label: String, der: [UInt8]) -> String {
        let header = Array("-----BEGIN \(label)-----\n".utf8CString)
        let footer = Array("-----END \(label)-----\n".utf8CString)
        // base64 is 4/3 of the input plus a newline per 64 characters, plus header, footer and NUL.
        var buffer = [UInt8](repeating: 0, count: der.count * 2 + header.count + footer.count + 16)
        var written = 0
        buffer.withUnsafeMutableBufferPointer { out in
            // Only MBEDTLS_ERR_BASE64_BUFFER_TOO_SMALL is possible, and the buffer is sized above.
            _ = MbedTLS.require(mbedtls_pem_write_buffer(header, footer, der, der.count, out.baseAddress, out.count, &written), "mbedtls_pem_write_buffer")
        }
        // `written` counts the terminating NUL.
        return String(decoding: buffer.prefix(max(0, written - 1)), as: UTF8.self)
    }

    /// The label of the first `-----BEGIN <label>-----` line, or nil when the bytes hold none.
    static func firstLabel(in bytes: [UInt8]) -> String? {
        let marker = Array("-----BEGIN ".utf8)
        guard let start = firstIndex(of: marker, in: bytes, from: 0) else { return nil }
        let labelStart = start + marker.count
        guard let end = firstIndex(of: Array("-----".utf8), in: bytes, from: labelStart) else { return nil }
        return String(decoding: bytes[labelStart..<end], as: UTF8.self)
    }

    /// The bytes with a terminating NUL, as `mbedtls_pk_parse_key` and friends need for PEM input
    /// (the NUL is counted in the length they are given).
    static func nulTerminated(_ bytes: [UInt8]) -> [UInt8] {
        bytes.last == 0 ? bytes : bytes + [0]
    }

    private static func firstIndex(of needle: [UInt8], in haystack: [UInt8], from: Int) -> Int? {
        guard haystack.count >= needle.count, from <= haystack.count - needle.count else { return nil }
        for index in from...(haystack.count - needle.count) where haystack[index..<index + needle.count].elementsEqual(needle) {
            return index
        }
        return nil
    }
}

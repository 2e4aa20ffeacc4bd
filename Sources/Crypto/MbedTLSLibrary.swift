import CMbedTLS

/// Facts about the mbedTLS library linked into this binary, as it reports them at run time.
public enum MbedTLSLibrary {
    /// The version string mbedTLS reports, e.g. "2.28.3".
    public static var version: String {
        // mbedtls_version_get_string writes at most 9 bytes ("xx.xx.xx" + NUL).
        var buffer = [CChar](repeating: 0, count: 18)
        mbedtls_version_get_string(&buffer)
        return CStringBuffer.string(buffer)
    }

    /// A readable form of an mbedTLS error code (negative), e.g. "X509 - Certificate verification failed (-0x2700)".
    public static func describe(_ code: Int32) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        mbedtls_strerror(code, &buffer, buffer.count)
        let text = CStringBuffer.string(buffer)
        let hex = String(UInt32(bitPattern: code < 0 ? -code : code), radix: 16)
        return "\(text) (\(code < 0 ? "-" : "")0x\(hex))"
    }
}

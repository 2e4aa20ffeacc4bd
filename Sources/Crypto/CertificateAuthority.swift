import CMbedTLS
import Glibc
import Vocabulary

/// A certificate and its private key, e.g. the simulator's TLS server identity.
public struct IssuedCertificate: Sendable {
    public let certificatePEM: String
    public let key: SigningKey

    /// Writes the certificate (mode 0644) and the private key as PKCS#8 PEM (mode 0600).
    public func write(certificateTo certificatePath: String, keyTo keyPath: String) throws(CryptoError) {
        try FileBytes.writePEM(certificatePEM, to: certificatePath, mode: 0o644)
        try key.writeP8(to: keyPath)
    }
}

/// A throwaway certificate authority for the APNs simulator: an EC P-256 key and a self-signed CA
/// certificate, which issues server certificates for loopback names (`localhost`, 127.0.0.1, ::1) so
/// the client verifies the simulator exactly as it verifies APNs, just against another CA file.
/// Never use it for anything but tests, demos and benchmarks.
public struct CertificateAuthority: Sendable {
    /// The CA certificate and key.
    public let identity: IssuedCertificate
    /// The CA's distinguished name in mbedTLS string form, e.g. "CN=Sokuho Simulator CA,O=Sokuho".
    public let subjectName: String

    public var certificatePEM: String { identity.certificatePEM }

    /// A new CA with a fresh key, valid from an hour before `now` for `validityDays`.
    public static func generate(commonName: String = "Sokuho Simulator Test CA", validityDays: Int = 3650,
                                now: Int64 = WallClock.seconds()) throws(CryptoError) -> CertificateAuthority {
        let key = try SigningKey.generate(source: "the CA key")
        let subject = distinguishedName(commonName: commonName)
        let pem = try key.withContext { (pk: PKContext) throws(CryptoError) -> String in
            try writeCertificate(subject: subject, subjectKey: pk, issuer: subject, issuerKey: pk,
                                 validity: (now, validityDays), authority: true, extensions: [])
        }
        return CertificateAuthority(identity: IssuedCertificate(certificatePEM: pem, key: key), subjectName: subject)
    }

    /// A server certificate with a fresh key for `dnsNames` and `ipAddresses` (subjectAltName),
    /// signed by this CA, with extendedKeyUsage serverAuth.
    public func issueServerCertificate(commonName: String = "localhost", dnsNames: [String] = ["localhost"],
                                       ipAddresses: [String] = ["127.0.0.1", "::1"], validityDays: Int = 825,
                                       now: Int64 = WallClock.seconds()) throws(CryptoError) -> IssuedCertificate {
        let extensions: [(oid: [UInt8], value: [UInt8])] = [
            (CertificateExtensions.subjectAltNameOID,
             try CertificateExtensions.subjectAltName(dnsNames: dnsNames, ipAddresses: ipAddresses)),
            (CertificateExtensions.extendedKeyUsageOID, CertificateExtensions.serverAuthExtendedKeyUsage()),
        ]
        let serverKey = try SigningKey.generate(source: "the server key")
        let subject = Self.distinguishedName(commonName: commonName)
        let pem = try identity.key.withContext { (issuerKey: PKContext) throws(CryptoError) -> String in
            try serverKey.withContext { (subjectKey: PKContext) throws(CryptoError) -> String in
                try Self.writeCertificate(subject: subject, subjectKey: subjectKey, issuer: subjectName, issuerKey: issuerKey,
                                          validity: (now, validityDays), authority: false, extensions: extensions)
            }
        }
        return IssuedCertificate(certificatePEM: pem, key: serverKey)
    }

    /// "CN=<name>,O=Sokuho", with commas in the name escaped as mbedTLS's name parser wants.
    private static func distinguishedName(commonName: String) -> String {
        let escaped = commonName.split(separator: ",", omittingEmptySubsequences: false).joined(separator: "\\,")
        return "CN=\(escaped),O=Sokuho"
    }

    /// One X.509 v3 certificate, SHA-256 with ECDSA, as PEM.
    private static func writeCertificate(subject: String, subjectKey: PKContext, issuer: String, issuerKey: PKContext,
                                         validity: (start: Int64, days: Int), authority: Bool,
                                         extensions: [(oid: [UInt8], value: [UInt8])]) throws(CryptoError) -> String {
        let certificate = MbedTLSObject<mbedtls_x509write_cert>(initialize: mbedtls_x509write_crt_init, free: mbedtls_x509write_crt_free)
        // mbedTLS uses `writer` until the PEM is written: keep its owner alive to the end.
        defer { withExtendedLifetime(certificate) {} }
        let writer = certificate.pointer
        mbedtls_x509write_crt_set_version(writer, MBEDTLS_X509_CRT_VERSION_3)
        mbedtls_x509write_crt_set_md_alg(writer, MBEDTLS_MD_SHA256)
        mbedtls_x509write_crt_set_subject_key(writer, subjectKey.pointer)
        mbedtls_x509write_crt_set_issuer_key(writer, issuerKey.pointer)

        // A positive 127-bit random serial (RFC 5280 allows up to 20 octets).
        var serialBytes = RandomSource.shared.bytes(16)
        serialBytes[0] = serialBytes[0] & 0x7f | 0x01
        let serial = MPI()
        do { try serial.read(bigEndian: serialBytes[...]) } catch { throw .mbedTLS("setting the serial", error.code) }
        try withExtendedLifetime(serial) { () throws(CryptoError) in try MbedTLS.check(mbedtls_x509write_crt_set_serial(writer, serial.pointer), "setting the serial") }

        let notBefore = validityTime(validity.start - 3600)
        let notAfter = validityTime(validity.start + Int64(validity.days) * 86_400)
        try MbedTLS.check(mbedtls_x509write_crt_set_validity(writer, notBefore, notAfter), "setting the validity")
        try MbedTLS.check(mbedtls_x509write_crt_set_subject_name(writer, subject), "setting the subject name \(subject)")
        try MbedTLS.check(mbedtls_x509write_crt_set_issuer_name(writer, issuer), "setting the issuer name \(issuer)")
        try MbedTLS.check(mbedtls_x509write_crt_set_basic_constraints(writer, authority ? 1 : 0, authority ? 0 : -1), "setting basic constraints")
        try MbedTLS.check(mbedtls_x509write_crt_set_subject_key_identifier(writer), "setting the subject key identifier")
        try MbedTLS.check(mbedtls_x509write_crt_set_authority_key_identifier(writer), "setting the authority key identifier")
        let usage = authority
            ? MBEDTLS_X509_KU_KEY_CERT_SIGN | MBEDTLS_X509_KU_CRL_SIGN
            : MBEDTLS_X509_KU_DIGITAL_SIGNATURE | MBEDTLS_X509_KU_KEY_AGREEMENT
        try MbedTLS.check(mbedtls_x509write_crt_set_key_usage(writer, UInt32(usage)), "setting the key usage")
        for (oid, value) in extensions {
            try oid.withUnsafeBufferPointer { (oidBytes) throws(CryptoError) in
                try oidBytes.withMemoryRebound(to: CChar.self) { (oidChars) throws(CryptoError) in
                    try MbedTLS.check(mbedtls_x509write_crt_set_extension(writer, oidChars.baseAddress, oidChars.count, 0, value, value.count), "adding a certificate extension")
                }
            }
        }

        var buffer = [UInt8](repeating: 0, count: 4096)
        try buffer.withUnsafeMutableBufferPointer { (out) throws(CryptoError) in
            try RandomSource.shared.withRNG { (random, state) throws(CryptoError) in
                try MbedTLS.check(mbedtls_x509write_crt_pem(writer, out.baseAddress, out.count, random, state), "writing the certificate")
            }
        }
        return String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)
    }

    /// "YYYYMMDDhhmmss" in UTC, the form mbedtls_x509write_crt_set_validity takes.
    private static func validityTime(_ seconds: Int64) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func digits(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return digits(parts.tm_year + 1900, 4) + digits(parts.tm_mon + 1, 2) + digits(parts.tm_mday, 2)
            + digits(parts.tm_hour, 2) + digits(parts.tm_min, 2) + digits(parts.tm_sec, 2)
    }
}

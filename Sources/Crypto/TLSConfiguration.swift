import CMbedTLS
import Glibc
import Synchronization

/// An mbedTLS TLS 1.2 configuration with ALPN `h2`, shared by every connection of one side; each
/// connection's `TLSStream` (next to it, in this module) runs a session on it.
///
/// Client side: certificate verification is always on (`MBEDTLS_SSL_VERIFY_REQUIRED`) against
/// `--ca-file` or the system bundle; there is no insecure mode. Server side: our own certificate and
/// key (the simulator's). All mbedTLS contexts live at stable heap addresses because mbedTLS keeps raw
/// pointers to them between calls (INTEROP.md), and the ALPN list outlives the configuration.
public final class TLSConfiguration: @unchecked Sendable {
    // @unchecked: after init the configuration is only read by mbedTLS (its EC keys get their generator
    // tables in init, see `GeneratorTable`); its ctr_drbg has its own mutex.
    public enum Role: Sendable { case client, server }

    public let role: Role
    /// Which CAs a client trusts, as a certificate-verification failure names them: "--ca-file PATH"
    /// or "the system CA bundle PATH". Nil on the server side.
    public let trustedCAs: String?
    let config: UnsafeMutablePointer<mbedtls_ssl_config>
    private let caChain: UnsafeMutablePointer<mbedtls_x509_crt>
    private let ownCertificate: UnsafeMutablePointer<mbedtls_x509_crt>
    private let ownKey: UnsafeMutablePointer<mbedtls_pk_context>
    private let alpnStrings: UnsafeMutablePointer<CChar>
    private let alpnList: UnsafeMutablePointer<UnsafePointer<CChar>?>
    private let random: RandomSource

    /// Where Debian keeps the system CA bundle.
    public static let systemCABundle = "/etc/ssl/certs/ca-certificates.crt"

    /// A client configuration that trusts the CAs in `caFile` (PEM), or the system bundle when nil.
    public static func client(caFile: String?) throws(TLSConfigurationError) -> TLSConfiguration {
        try TLSConfiguration(role: .client, caFile: caFile ?? systemCABundle, certificateFile: nil, keyFile: nil,
                             caFromUser: caFile != nil)
    }

    /// A server configuration presenting `certificateFile` (PEM chain) with `keyFile` (PEM key).
    public static func server(certificateFile: String, keyFile: String) throws(TLSConfigurationError) -> TLSConfiguration {
        try TLSConfiguration(role: .server, caFile: nil, certificateFile: certificateFile, keyFile: keyFile, caFromUser: false)
    }

    private init(role: Role, caFile: String?, certificateFile: String?, keyFile: String?, caFromUser: Bool) throws(TLSConfigurationError) {
        self.role = role
        trustedCAs = caFile.map { caFromUser ? "--ca-file \($0)" : "the system CA bundle \($0)" }
        config = .allocate(capacity: 1)
        caChain = .allocate(capacity: 1)
        ownCertificate = .allocate(capacity: 1)
        ownKey = .allocate(capacity: 1)
        mbedtls_ssl_config_init(config)
        mbedtls_x509_crt_init(caChain)
        mbedtls_x509_crt_init(ownCertificate)
        mbedtls_pk_init(ownKey)
        // "h2\0" and a NULL-terminated list pointing at it.
        alpnStrings = .allocate(capacity: 3)
        alpnStrings[0] = CChar(UInt8(ascii: "h")); alpnStrings[1] = CChar(UInt8(ascii: "2")); alpnStrings[2] = 0
        alpnList = .allocate(capacity: 2)
        alpnList[0] = UnsafePointer(alpnStrings); alpnList[1] = nil
        random = RandomSource.shared

        let endpoint = role == .client ? MBEDTLS_SSL_IS_CLIENT : MBEDTLS_SSL_IS_SERVER
        try MbedTLS.check(mbedtls_ssl_config_defaults(config, endpoint, MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT)) { TLSConfigurationError.mbedTLS("ssl_config_defaults", $0) }
        mbedtls_ssl_conf_min_version(config, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3)
        random.install(in: config)
        try MbedTLS.check(mbedtls_ssl_conf_alpn_protocols(config, alpnList)) { TLSConfigurationError.mbedTLS("ssl_conf_alpn_protocols", $0) }

        if let caFile {
            let unreadable = { (rc: Int32) in caFromUser ? TLSConfigurationError.caFile(caFile, rc) : .systemCABundle(caFile, rc) }
            // A positive count is how many certificates of the file did not parse: they are skipped,
            // and the file fails only when none did.
            var status = stat()
            if caFromUser, stat(caFile, &status) == 0, status.st_mode & S_IFMT == S_IFDIR { throw .caFileIsDirectory(caFile) }
            // mbedTLS says "Read/write of file failed" for both: name the cause a person can fix.
            if caFromUser, access(caFile, R_OK) != 0 {
                throw errno == ENOENT ? .caFileMissing(caFile) : .caFileUnreadable(caFile, String(cString: strerror(errno)))
            }
            let skipped: Int
            do { skipped = try MbedTLS.count(mbedtls_x509_crt_parse_file(caChain, caFile)) } catch { throw unreadable(error.code) }
            guard caChain.pointee.version != 0 else { throw unreadable(Int32(skipped)) }
            // Every connection of every loop thread verifies its peer with these keys.
            for certificate in GeneratorTable.certificates(caChain) {
                do { try GeneratorTable.precompute(GeneratorTable.key(of: certificate)) } catch { throw .mbedTLS("ecp_mul (CA key table)", error.code) }
            }
            mbedtls_ssl_conf_ca_chain(config, caChain, nil)
            mbedtls_ssl_conf_authmode(config, MBEDTLS_SSL_VERIFY_REQUIRED)
        }
        if let certificateFile, let keyFile {
            try MbedTLS.check(mbedtls_x509_crt_parse_file(ownCertificate, certificateFile)) { TLSConfigurationError.certificateFile(certificateFile, $0) }
            try MbedTLS.check(mbedtls_pk_parse_keyfile(ownKey, keyFile, nil)) { TLSConfigurationError.keyFile(keyFile, $0) }
            // Every connection of every loop thread signs its handshake with this key.
            do { try GeneratorTable.precompute(ownKey) } catch { throw .mbedTLS("ecp_mul (own key table)", error.code) }
            try MbedTLS.check(mbedtls_ssl_conf_own_cert(config, ownCertificate, ownKey)) { TLSConfigurationError.mbedTLS("ssl_conf_own_cert", $0) }
            mbedtls_ssl_conf_authmode(config, MBEDTLS_SSL_VERIFY_NONE)
        }
    }

    deinit {
        mbedtls_ssl_config_free(config)
        mbedtls_x509_crt_free(caChain)
        mbedtls_x509_crt_free(ownCertificate)
        mbedtls_pk_free(ownKey)
        config.deallocate(); caChain.deallocate(); ownCertificate.deallocate(); ownKey.deallocate()
        alpnStrings.deallocate(); alpnList.deallocate()
    }

    /// How many of this configuration's EC keys (its own, its CAs') still lack the generator table
    /// that mbedTLS would otherwise write on first use from whichever thread gets there first.
    var keysWithoutGeneratorTable: Int {
        ([ownKey] + GeneratorTable.certificates(caChain).map(GeneratorTable.key(of:))).count { !GeneratorTable.isReady($0) }
    }

    /// The raw config for `mbedtls_ssl_setup` (`TLSStream`); it never leaves this module.
    var sslConfig: UnsafePointer<mbedtls_ssl_config> { UnsafePointer(config) }
}

/// Why a TLS configuration could not be built: the message names the file and the fix.
public enum TLSConfigurationError: Error, Sendable, CustomStringConvertible {
    case caFile(String, Int32)
    /// `--ca-file` (or an app's `caFile`) names a directory: mbedTLS reports it as a failed allocation.
    case caFileIsDirectory(String)
    /// The CA file does not exist, or this user may not read it.
    case caFileMissing(String)
    case caFileUnreadable(String, String)
    case systemCABundle(String, Int32)
    case certificateFile(String, Int32)
    case keyFile(String, Int32)
    case mbedTLS(String, Int32)

    public var description: String {
        switch self {
        case let .caFile(path, rc):
            return "--ca-file \(path): no PEM certificate could be read (\(MbedTLSLibrary.describe(rc))); pass the CA the server's certificate was issued by, e.g. the simulator's <cert-dir>/ca.pem"
        case let .caFileMissing(path):
            return "--ca-file \(path) does not exist; give the PEM file of the CA the server's certificate was issued by, e.g. the simulator's <cert-dir>/ca.pem"
        case let .caFileUnreadable(path, reason):
            return "--ca-file \(path) cannot be read by this user (\(reason)); make it readable (chmod 644: a CA certificate is not a secret)"
        case let .caFileIsDirectory(path):
            return "--ca-file \(path) is a directory; give the PEM file of the CA the server's certificate was issued by, e.g. the simulator's <cert-dir>/ca.pem"
        case let .systemCABundle(path, rc):
            return "the system CA bundle \(path) could not be read (\(MbedTLSLibrary.describe(rc))); install Debian's ca-certificates or pass --ca-file"
        case let .certificateFile(path, rc):
            return "certificate \(path) could not be read (\(MbedTLSLibrary.describe(rc))); it must be a PEM certificate"
        case let .keyFile(path, rc):
            return "key \(path) could not be read (\(MbedTLSLibrary.describe(rc))); it must be an unencrypted PEM private key"
        case let .mbedTLS(call, rc):
            return "mbedtls_\(call) failed: \(MbedTLSLibrary.describe(rc))"
        }
    }
}

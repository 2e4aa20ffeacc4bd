/// What went wrong with a key, a provider-token identity or a certificate, worded for the person who
/// has to fix it: every message names the file or field and says what to do.
///
/// `source` is the key's file path, or a short description such as "the key in SOKUHO_APNS_KEY" when
/// the PEM did not come from a file.
public enum CryptoError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No file at the path (ENOENT).
    case keyFileMissing(path: String)
    /// The file exists but cannot be read (permissions, a directory, an I/O error).
    case keyFileUnreadable(path: String, reason: String)
    /// A password-protected key (`ENCRYPTED PRIVATE KEY`, or a legacy `Proc-Type: 4,ENCRYPTED` PEM).
    case keyEncrypted(source: String)
    /// A private key of another algorithm, e.g. "RSA".
    case keyNotEC(source: String, algorithm: String)
    /// An EC key on a curve other than P-256, e.g. "secp384r1".
    case keyWrongCurve(source: String, curve: String)
    /// Not a private key at all: empty, garbage, a certificate, a public key, a corrupt PEM.
    case keyUnrecognized(source: String, detail: String)
    /// A public key (for token verification) that cannot be parsed or is not EC P-256.
    case publicKeyUnrecognized(source: String, detail: String)
    /// A Key ID that is not 10 characters A–Z, 0–9.
    case invalidKeyID(String)
    /// A Team ID that is not 10 characters A–Z, 0–9.
    case invalidTeamID(String)
    /// An mbedTLS operation failed (key generation, signing, certificate writing).
    case mbedTLSFailure(operation: String, detail: String)
    /// A subjectAltName IP address that is neither IPv4 nor IPv6 text.
    case invalidIPAddress(String)
    /// A subjectAltName DNS name that is empty, too long or not ASCII letters, digits, '-', '.', '*'.
    case invalidDNSName(String)
    /// Writing an output file (key, certificate) failed.
    case fileWriteFailed(path: String, reason: String)
    /// An FCM service account's private key that is not an unencrypted PKCS#8 RSA key of 2,048 to
    /// 4,096 bits; `detail` says what it is instead (PKCS#1, EC, encrypted, too short, garbage).
    case rsaKeyRefused(source: String, detail: String)
    /// An RSA public key (for assertion verification) that cannot be parsed or is not RSA.
    case rsaPublicKeyRefused(source: String, detail: String)

    public var description: String {
        switch self {
        case let .keyFileMissing(path):
            return "provider key file not found: \(path). Download the key (AuthKey_<KEYID>.p8) from "
                + "developer.apple.com → Certificates, Identifiers & Profiles → Keys, or fix the path."
        case let .keyFileUnreadable(path, reason):
            return "cannot read key file \(path): \(reason). Make it a regular file readable by this user "
                + "(e.g. chmod 600 and chown it to the user that runs sokuho)."
        case let .keyEncrypted(source):
            return "\(source) is an encrypted private key; Apple's .p8 keys are not encrypted and sokuho takes "
                + "no password. Decrypt it once with: openssl pkcs8 -in <encrypted.p8> -out <key.p8>"
        case let .keyNotEC(source, algorithm):
            return "\(source) is an \(algorithm) key; APNs provider tokens are ES256 and need the EC P-256 .p8 "
                + "key downloaded from Apple (it begins with -----BEGIN PRIVATE KEY-----)."
        case let .keyWrongCurve(source, curve):
            return "\(source) is an EC key on curve \(curve); ES256 needs P-256 (prime256v1). "
                + "Use the .p8 key downloaded from Apple."
        case let .keyUnrecognized(source, detail):
            return "\(source) is not a PEM private key (\(detail)). Pass the .p8 file downloaded from Apple: "
                + "a text file between -----BEGIN PRIVATE KEY----- and -----END PRIVATE KEY-----."
        case let .publicKeyUnrecognized(source, detail):
            return "\(source) is not an EC P-256 public key (\(detail)). Give a PEM between "
                + "-----BEGIN PUBLIC KEY----- and -----END PUBLIC KEY----- (openssl pkey -in key.p8 -pubout)."
        case let .invalidKeyID(value):
            return "key id \"\(value)\" is not a 10-character Key ID (A–Z, 0–9). It is the part after "
                + "AuthKey_ in the .p8 file name, also shown under Keys in your Apple developer account."
        case let .invalidTeamID(value):
            return "team id \"\(value)\" is not a 10-character Team ID (A–Z, 0–9). Find it under "
                + "Membership details in your Apple developer account."
        case let .mbedTLSFailure(operation, detail):
            return "\(operation) failed in mbedTLS: \(detail)"
        case let .invalidIPAddress(value):
            return "\"\(value)\" is not an IPv4 or IPv6 address (e.g. 127.0.0.1 or ::1)."
        case let .invalidDNSName(value):
            return "\"\(value)\" is not a DNS name (letters, digits, '-', '.', an optional leading '*.'; at most 253 characters)."
        case let .fileWriteFailed(path, reason):
            return "cannot write \(path): \(reason). Check that the directory exists and is writable."
        case let .rsaKeyRefused(source, detail):
            return "\(source) is not an RSA private key in PKCS#8 (\(detail)). FCM's RS256 needs the private_key of the "
                + "service-account JSON file as Google ships it (Firebase console → Project settings → Service accounts → "
                + "Generate new private key): -----BEGIN PRIVATE KEY----- … -----END PRIVATE KEY-----."
        case let .rsaPublicKeyRefused(source, detail):
            return "\(source) is not an RSA public key (\(detail)). Give a PEM between -----BEGIN PUBLIC KEY----- and "
                + "-----END PUBLIC KEY----- (openssl pkey -in key.pem -pubout)."
        }
    }

    /// The error for a failed mbedTLS call: the operation and mbedTLS's own text for `code`.
    static func mbedTLS(_ operation: String, _ code: Int32) -> CryptoError {
        .mbedTLSFailure(operation: operation, detail: MbedTLSLibrary.describe(code))
    }
}

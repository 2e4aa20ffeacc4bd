import CMbedTLS
import Vocabulary

/// An RSA private key that signs RS256 (RSASSA-PKCS1-v1_5 with SHA-256): an FCM service account's
/// key, which signs the JWT assertion exchanged for an access token (FCM.md, "Authentication").
///
/// Loading takes exactly what Google ships in the service-account JSON's `private_key`: PEM PKCS#8
/// (`BEGIN PRIVATE KEY`), unencrypted, RSA of 2,048 bits (up to 4,096 accepted). Everything else is
/// refused with `CryptoError.rsaKeyRefused` saying what it is — PKCS#1 (`BEGIN RSA PRIVATE KEY`,
/// with the openssl line that converts it), EC, encrypted, too short — so a key pasted from the
/// wrong place fails at start, not as `invalid_grant` from Google.
///
/// Thread-safe: blinding writes into the RSA context, so it sits behind a `Lock`. Signing costs a
/// few milliseconds and happens once per access token (about hourly).
public final class RSASigningKey: Sendable, JWSSigningKey {
    private let context: Lock<PKContext>
    /// Where the key came from, used in messages (e.g. "private_key of /etc/sokuho/fcm.json").
    public let source: String
    /// SubjectPublicKeyInfo DER of the public half, computed once.
    public let publicKeyDER: [UInt8]
    /// The modulus size in bits.
    public let bits: Int

    /// Loads a key file (the simulator keeps its service account's key in one).
    public convenience init(contentsOf path: String) throws(CryptoError) {
        try self.init(pem: FileBytes.readKey(path, ifMissing: .keyFileMissing(path: path),
                                             ifTooLarge: .rsaKeyRefused(source: path, detail: "it is larger than 1 MiB; an RSA key is about 1,700 bytes")),
                      source: path)
    }

    /// Loads a PEM PKCS#8 RSA key; `source` names it in errors.
    public init(pem bytes: [UInt8], source: String) throws(CryptoError) {
        let parsed = try Self.parse(bytes, source: source)
        self.source = source
        bits = parsed.bitLength
        publicKeyDER = parsed.publicKeyDER()
        context = Lock(parsed)
    }

    private init(generated: sending PKContext, source: String) {
        self.source = source
        bits = generated.bitLength
        publicKeyDER = generated.publicKeyDER()
        context = Lock(generated)
    }

    /// A new random RSA key of `bits` (2,048 as Google issues them), for the simulator's service
    /// account and tests.
    public static func generate(bits: Int = 2048, source: String = "a generated RSA key") throws(CryptoError) -> RSASigningKey {
        RSASigningKey(generated: try PKContext.generateRSA(bits: bits), source: source)
    }

    /// The RS256 signature of `message`: SHA-256, then RSASSA-PKCS1-v1_5; `bits / 8` bytes.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let digest = SHA256.hash(message)
        return try context.withLock { (key: inout PKContext) throws(CryptoError) -> [UInt8] in
            try key.signPKCS1v15(digest: digest)
        }
    }

    /// The public half, e.g. for the simulator's assertion checks.
    public var verifyingKey: RSAVerifyingKey { RSAVerifyingKey(validatedDER: publicKeyDER, source: source) }

    /// The public key as PEM (`BEGIN PUBLIC KEY`), as `openssl pkey -pubout` prints it.
    public var publicKeyPEM: String { PEM.encode(label: "PUBLIC KEY", der: publicKeyDER) }

    /// The private key as PEM PKCS#8 (`BEGIN PRIVATE KEY`), the layout of Google's files. mbedTLS
    /// writes PKCS#1 only, so the PKCS#8 wrapper is built here.
    public var pkcs8PEM: String {
        let pkcs1 = context.withLock { $0.pkcs1PrivateKeyDER() }
        return PEM.encode(label: "PRIVATE KEY", der: DER.pkcs8PrivateKeyInfo(wrappingPKCS1: pkcs1))
    }

    /// Writes `pkcs8PEM` to `path` with mode 0600.
    public func writePKCS8(to path: String) throws(CryptoError) {
        try FileBytes.writePEM(pkcs8PEM, to: path, mode: 0o600)
    }

    private static func parse(_ bytes: [UInt8], source: String) throws(CryptoError) -> PKContext {
        switch PEM.firstLabel(in: bytes) {
        case "PRIVATE KEY":
            break
        case "RSA PRIVATE KEY":
            throw .rsaKeyRefused(source: source, detail: "it is PKCS#1 (BEGIN RSA PRIVATE KEY), not the PKCS#8 Google ships; "
                                 + "convert it with: openssl pkcs8 -topk8 -nocrypt -in key.pem -out key.p8")
        case "EC PRIVATE KEY":
            throw .rsaKeyRefused(source: source, detail: "it is an EC key (BEGIN EC PRIVATE KEY); RS256 needs RSA")
        case "ENCRYPTED PRIVATE KEY":
            throw .rsaKeyRefused(source: source, detail: "it is encrypted; Google's keys are not, and sokuho takes no password")
        case let other?:
            throw .rsaKeyRefused(source: source, detail: "it holds a \"\(other)\" PEM block, not a private key")
        case nil:
            throw .rsaKeyRefused(source: source, detail: bytes.isEmpty ? "it is empty" : "there is no -----BEGIN PRIVATE KEY----- line")
        }
        let input = PEM.nulTerminated(bytes)
        let key = PKContext()
        do {
            try MbedTLS.check(mbedtls_pk_parse_key(key.pointer, input, input.count, nil, 0))
        } catch {
            throw .rsaKeyRefused(source: source, detail: "the PEM block does not parse: \(error)")
        }
        guard key.isRSA else {
            throw .rsaKeyRefused(source: source, detail: "it is an \(key.algorithmName) key in PKCS#8; RS256 needs RSA")
        }
        guard PKContext.rsaBits.contains(key.bitLength) else {
            throw .rsaKeyRefused(source: source, detail: "it has \(key.bitLength) bits; RS256 here takes \(PKContext.rsaBits.lowerBound) to \(PKContext.rsaBits.upperBound)")
        }
        return key
    }
}

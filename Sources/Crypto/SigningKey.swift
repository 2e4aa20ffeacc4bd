import CMbedTLS
import Vocabulary

/// An EC P-256 private key: an APNs provider key (`AuthKey_<KEYID>.p8`), or a key this process made
/// for the simulator's certificates or a test provider key.
///
/// Loading accepts PEM PKCS#8 (`BEGIN PRIVATE KEY`, including Apple's layout whose inner
/// ECPrivateKey repeats the curve parameters and carries the public key), PEM SEC1
/// (`BEGIN EC PRIVATE KEY`) and the same as DER, and refuses everything else with a `CryptoError`
/// that names the file and the fix.
///
/// Thread-safe: the mbedTLS context sits behind a `Lock`, because ECDSA signing writes into the
/// key's group. Signing costs about a millisecond and happens once per token generation.
public final class SigningKey: Sendable {
    private let context: Lock<PKContext>
    /// Where the key came from (a path or a description), used in messages.
    public let source: String
    /// SubjectPublicKeyInfo DER of the public half, computed once.
    public let publicKeyDER: [UInt8]

    /// Loads a key file, e.g. the `.p8` downloaded from Apple.
    public convenience init(contentsOf path: String) throws(CryptoError) {
        try self.init(pem: FileBytes.readKey(path, ifMissing: .keyFileMissing(path: path),
                                             ifTooLarge: .keyUnrecognized(source: path, detail: "it is larger than 1 MiB; a .p8 key is about 250 bytes")),
                      source: path)
    }

    /// Loads a key from PEM (or DER) bytes; `source` names them in errors, e.g. "the key in SOKUHO_APNS_KEY".
    public init(pem bytes: [UInt8], source: String) throws(CryptoError) {
        let parsed = try Self.parse(bytes, source: source)
        self.source = source
        publicKeyDER = parsed.publicKeyDER()
        context = Lock(parsed)
    }

    private init(generated: sending PKContext, source: String) {
        self.source = source
        publicKeyDER = generated.publicKeyDER()
        context = Lock(generated)
    }

    /// A new random P-256 key.
    public static func generate(source: String = "a generated key") throws(CryptoError) -> SigningKey {
        SigningKey(generated: try PKContext.generateP256(), source: source)
    }

    /// Generates a provider key and writes it to `path` as a `.p8` in Apple's layout (mode 0600), so
    /// the simulator, demo and benchmarks run without an Apple account.
    @discardableResult
    public static func generateP8(at path: String) throws(CryptoError) -> SigningKey {
        let key = try generate(source: path)
        try key.writeP8(to: path)
        return key
    }

    /// The ES256 signature of `message` (SHA-256, then deterministic ECDSA per RFC 6979): 64 bytes
    /// r||s, as JWS wants. The same key and message always give the same bytes.
    public func sign(_ message: [UInt8]) throws(CryptoError) -> [UInt8] {
        let digest = SHA256.hash(message)
        return try context.withLock { (key: inout PKContext) throws(CryptoError) -> [UInt8] in
            try key.signRaw(digest: digest)
        }
    }

    /// The public half, for `ProviderTokenVerifier`.
    public var verifyingKey: VerifyingKey { VerifyingKey(validatedDER: publicKeyDER, source: source) }

    /// The public key as PEM (`BEGIN PUBLIC KEY`), as `openssl pkey -pubout` prints it.
    public var publicKeyPEM: String { PEM.encode(label: "PUBLIC KEY", der: publicKeyDER) }

    /// The private key as PEM PKCS#8 in Apple's `.p8` layout.
    public var pkcs8PEM: String {
        let sec1 = context.withLock { $0.sec1PrivateKeyDER() }
        return PEM.encode(label: "PRIVATE KEY", der: DER.pkcs8PrivateKeyInfo(wrappingSEC1: sec1))
    }

    /// Writes `pkcs8PEM` to `path` with mode 0600.
    public func writeP8(to path: String) throws(CryptoError) {
        try FileBytes.writePEM(pkcs8PEM, to: path, mode: 0o600)
    }

    /// Runs `body` with exclusive use of the mbedTLS context (certificate signing needs the raw `pk`).
    func withContext<Result: Sendable>(_ body: (PKContext) throws(CryptoError) -> Result) throws(CryptoError) -> Result {
        try context.withLock { (key: inout PKContext) throws(CryptoError) -> Result in try body(key) }
    }

    private static func parse(_ bytes: [UInt8], source: String) throws(CryptoError) -> PKContext {
        let label = PEM.firstLabel(in: bytes)
        switch label {
        case nil:
            if bytes.isEmpty { throw .keyUnrecognized(source: source, detail: "it is empty") }
        case "PRIVATE KEY", "EC PRIVATE KEY":
            break
        case "ENCRYPTED PRIVATE KEY":
            throw .keyEncrypted(source: source)
        case let other? where other.hasSuffix(" PRIVATE KEY"):
            throw .keyNotEC(source: source, algorithm: String(other.dropLast(" PRIVATE KEY".count)))
        case let other?:
            throw .keyUnrecognized(source: source, detail: "it holds a \"\(other)\" PEM block, not a private key")
        }
        // PEM must be NUL-terminated with the NUL counted in the length; DER is passed as is.
        let input = label == nil ? bytes : PEM.nulTerminated(bytes)
        let key = PKContext()
        do {
            try MbedTLS.check(mbedtls_pk_parse_key(key.pointer, input, input.count, nil, 0))
        } catch {
            switch error.code {
            case MBEDTLS_ERR_PK_PASSWORD_REQUIRED, MBEDTLS_ERR_PK_PASSWORD_MISMATCH:
                throw .keyEncrypted(source: source)
            case MBEDTLS_ERR_PK_UNKNOWN_NAMED_CURVE:
                throw .keyWrongCurve(source: source, curve: "a curve mbedTLS does not know")
            case MBEDTLS_ERR_PK_UNKNOWN_PK_ALG where label != nil:
                // A well-formed PKCS#8 key of an algorithm mbedTLS has no parser for.
                throw .keyNotEC(source: source, algorithm: "Ed25519 or other non-EC")
            default:
                let detail = label == nil
                    ? "no -----BEGIN PRIVATE KEY----- line, and not a DER key either"
                    : "the PEM block does not parse: \(error)"
                throw .keyUnrecognized(source: source, detail: detail)
            }
        }
        guard key.isEC else { throw .keyNotEC(source: source, algorithm: key.algorithmName) }
        guard key.isP256 else { throw .keyWrongCurve(source: source, curve: key.curveName) }
        return key
    }
}

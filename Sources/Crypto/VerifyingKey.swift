import CMbedTLS
import Vocabulary

/// An EC P-256 public key that checks ES256 signatures (64-byte r||s), for the simulator's
/// provider-token verification.
///
/// Thread-safe: verification also writes into the key's group inside mbedTLS, so the context sits
/// behind a `Lock`.
public final class VerifyingKey: Sendable {
    private let context: Lock<PKContext>
    /// SubjectPublicKeyInfo DER.
    public let publicKeyDER: [UInt8]

    /// Loads a public key file (`BEGIN PUBLIC KEY`), or the public half of a private key file such as
    /// a `.p8`, so the simulator can be pointed at whichever the user has.
    public convenience init(contentsOf path: String) throws(CryptoError) {
        let bytes = try FileBytes.readKey(path, ifMissing: .publicKeyUnrecognized(source: path, detail: "there is no such file"),
                                          ifTooLarge: .publicKeyUnrecognized(source: path, detail: "it is larger than 1 MiB"))
        if let label = PEM.firstLabel(in: bytes), label.hasSuffix("PRIVATE KEY") {
            let privateKey = try SigningKey(pem: bytes, source: path)
            self.init(validatedDER: privateKey.publicKeyDER, source: path)
        } else {
            try self.init(pem: bytes, source: path)
        }
    }

    /// Parses a public key: PEM `BEGIN PUBLIC KEY` (as `openssl pkey -pubout` writes it) or DER.
    public init(pem bytes: [UInt8], source: String) throws(CryptoError) {
        let isPEM = PEM.firstLabel(in: bytes) != nil
        let input = isPEM ? PEM.nulTerminated(bytes) : bytes
        let key = PKContext()
        try MbedTLS.check(mbedtls_pk_parse_public_key(key.pointer, input, input.count)) { CryptoError.publicKeyUnrecognized(source: source, detail: MbedTLSLibrary.describe($0)) }
        guard key.isEC else { throw .publicKeyUnrecognized(source: source, detail: "it is an \(key.algorithmName) key") }
        guard key.isP256 else { throw .publicKeyUnrecognized(source: source, detail: "it is on curve \(key.curveName)") }
        publicKeyDER = key.publicKeyDER()
        context = Lock(key)
    }

    /// The public half of a key already checked to be P-256 (from `SigningKey.verifyingKey`).
    convenience init(validatedDER der: [UInt8], source: String) {
        do {
            try self.init(pem: der, source: source)
        } catch {
            preconditionFailure("mbedTLS refused the public key it wrote itself: \(error)")
        }
    }

    /// Whether `signature` (64 bytes r||s) is this key's ES256 signature of `message`.
    public func isValidSignature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        let digest = SHA256.hash(message)
        return context.withLock { $0.verifyRaw(digest: digest, signature: signature) }
    }

    /// The public key as PEM (`BEGIN PUBLIC KEY`).
    public var pem: String { PEM.encode(label: "PUBLIC KEY", der: publicKeyDER) }
}

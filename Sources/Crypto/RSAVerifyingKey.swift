import CMbedTLS
import Vocabulary

/// An RSA public key that checks RS256 signatures: the simulator's check of the assertions its
/// token endpoint is sent (as Google checks them against the service account's public key).
///
/// Thread-safe: the context sits behind a `Lock`, as every `PKContext` here does.
public final class RSAVerifyingKey: Sendable {
    private let context: Lock<PKContext>
    /// SubjectPublicKeyInfo DER.
    public let publicKeyDER: [UInt8]

    /// Parses a public key: PEM `BEGIN PUBLIC KEY` (as `openssl pkey -pubout` writes it) or DER.
    public init(pem bytes: [UInt8], source: String) throws(CryptoError) {
        let input = PEM.firstLabel(in: bytes) != nil ? PEM.nulTerminated(bytes) : bytes
        let key = PKContext()
        try MbedTLS.check(mbedtls_pk_parse_public_key(key.pointer, input, input.count)) { CryptoError.rsaPublicKeyRefused(source: source, detail: MbedTLSLibrary.describe($0)) }
        guard key.isRSA else { throw .rsaPublicKeyRefused(source: source, detail: "it is an \(key.algorithmName) key") }
        guard PKContext.rsaBits.contains(key.bitLength) else {
            throw .rsaPublicKeyRefused(source: source, detail: "it has \(key.bitLength) bits")
        }
        publicKeyDER = key.publicKeyDER()
        context = Lock(key)
    }

    /// The public half of a key already checked (from `RSASigningKey.verifyingKey`).
    convenience init(validatedDER der: [UInt8], source: String) {
        do {
            try self.init(pem: der, source: source)
        } catch {
            preconditionFailure("mbedTLS refused the RSA public key it wrote itself: \(error)")
        }
    }

    /// Whether `signature` is this key's RS256 signature of `message`.
    public func isValidSignature(_ signature: [UInt8], of message: [UInt8]) -> Bool {
        let digest = SHA256.hash(message)
        return context.withLock { $0.verifyPKCS1v15(digest: digest, signature: signature) }
    }

    /// The public key as PEM (`BEGIN PUBLIC KEY`).
    public var pem: String { PEM.encode(label: "PUBLIC KEY", der: publicKeyDER) }
}

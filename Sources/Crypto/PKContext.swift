import CMbedTLS

/// One `mbedtls_pk_context` (a key) at a stable heap address, freed with its owner.
///
/// Not thread-safe: mbedTLS writes into the key's EC group during the first signature or
/// verification (precomputed multiples of the generator). `SigningKey` and `VerifyingKey` keep it
/// behind a `Lock`.
final class PKContext {
    private let storage = MbedTLSObject<mbedtls_pk_context>(initialize: mbedtls_pk_init, free: mbedtls_pk_free)
    var pointer: UnsafeMutablePointer<mbedtls_pk_context> { storage.pointer }

    /// A fresh EC P-256 key pair from the shared `RandomSource`.
    static func generateP256() throws(CryptoError) -> PKContext {
        let context = PKContext()
        try MbedTLS.check(mbedtls_pk_setup(context.pointer, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)), "setting up an EC key")
        try RandomSource.shared.withRNG { (random, state) throws(CryptoError) in
            try MbedTLS.check(mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, context.keypair, random, state), "generating an EC P-256 key")
        }
        return context
    }

    /// The EC key pair inside; valid only for EC keys (check `isEC` first).
    var keypair: UnsafeMutablePointer<mbedtls_ecp_keypair> {
        pointer.pointee.pk_ctx.assumingMemoryBound(to: mbedtls_ecp_keypair.self)
    }

    /// The key pair's group, secret scalar and public point, addressed explicitly (not with `&` on
    /// `pointee` members) so mbedTLS always gets the key's own memory.
    var group: UnsafeMutablePointer<mbedtls_ecp_group> { member(\.grp) }
    var secret: UnsafeMutablePointer<mbedtls_mpi> { member(\.d) }
    var publicPoint: UnsafeMutablePointer<mbedtls_ecp_point> { member(\.Q) }

    private func member<Member>(_ path: KeyPath<mbedtls_ecp_keypair, Member>) -> UnsafeMutablePointer<Member> {
        let offset = MemoryLayout<mbedtls_ecp_keypair>.offset(of: path)!
        return (UnsafeMutableRawPointer(keypair) + offset).assumingMemoryBound(to: Member.self)
    }

    /// Whether the key is an elliptic-curve key of any flavour mbedTLS parses.
    var isEC: Bool {
        let type = mbedtls_pk_get_type(pointer)
        return type == MBEDTLS_PK_ECKEY || type == MBEDTLS_PK_ECKEY_DH || type == MBEDTLS_PK_ECDSA
    }

    /// mbedTLS's name for the key's algorithm, e.g. "RSA" or "EC".
    var algorithmName: String {
        mbedtls_pk_get_name(pointer).map { String(cString: $0) } ?? "unknown"
    }

    /// Whether the key is on P-256 (only meaningful when `isEC`).
    var isP256: Bool { group.pointee.id == MBEDTLS_ECP_DP_SECP256R1 }

    /// The curve's standard name, e.g. "secp384r1" (only meaningful when `isEC`).
    var curveName: String {
        guard let info = mbedtls_ecp_curve_info_from_grp_id(group.pointee.id) else { return "an unknown curve" }
        return String(cString: info.pointee.name)
    }

    /// SubjectPublicKeyInfo DER (sized for an RSA key of up to 4,096 bits too, about 550 bytes).
    func publicKeyDER() -> [UInt8] {
        writeDER(capacity: 1024) { buffer, size in MbedTLS.require(mbedtls_pk_write_pubkey_der(pointer, buffer, size), "mbedTLS DER writer") }
    }

    /// The private key as mbedTLS writes it: a SEC1 ECPrivateKey with the curve parameters and the
    /// public key included (exactly the inner key of Apple's .p8 layout).
    func sec1PrivateKeyDER() -> [UInt8] {
        writeDER(capacity: 512) { buffer, size in MbedTLS.require(mbedtls_pk_write_key_der(pointer, buffer, size), "mbedTLS DER writer") }
    }

    /// mbedTLS DER writers fill the *end* of the buffer and return the length (or an error < 0).
    /// The buffers are sized for the largest key each caller writes (P-256, RSA up to 4,096 bits),
    /// so `write` requires success (`MbedTLS.require`) and returns the length.
    func writeDER(capacity: Int, _ write: (UnsafeMutablePointer<UInt8>, Int) -> Int) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: capacity)
        let length = buffer.withUnsafeMutableBufferPointer { write($0.baseAddress!, $0.count) }
        precondition(length > 0, "mbedTLS DER writer wrote nothing")
        return Array(buffer.suffix(length))
    }

    /// A deterministic ECDSA signature (RFC 6979, nonce derived from the key and the SHA-256
    /// `digest`) in JWS form: r and s as 32-byte big-endian integers, left-padded with zeros,
    /// concatenated (64 bytes) — not DER.
    ///
    /// Deterministic so that every process and node holding the same key signs the same provider
    /// token to the same bytes (`ProviderTokenSource`'s shared grid). The random generator passed
    /// here only blinds the scalar multiplication against side channels; it never changes the output.
    func signRaw(digest: [UInt8]) throws(CryptoError) -> [UInt8] {
        let r = MPI(), s = MPI()
        try RandomSource.shared.withRNG { (random, state) throws(CryptoError) in
            try MbedTLS.check(mbedtls_ecdsa_sign_det_ext(group, r.pointer, s.pointer, secret, digest, digest.count, MBEDTLS_MD_SHA256, random, state), "ECDSA signing")
        }
        return try r.bigEndian(width: 32) + s.bigEndian(width: 32)
    }

    /// Whether `signature` (64-byte r||s) is a valid ECDSA signature of `digest` by this key.
    func verifyRaw(digest: [UInt8], signature: [UInt8]) -> Bool {
        guard signature.count == 64 else { return false }
        let r = MPI(), s = MPI()
        do { try r.read(bigEndian: signature[0..<32]); try s.read(bigEndian: signature[32..<64]) } catch { return false }
        return withExtendedLifetime((r, s)) {
            // Any failure (a wrong signature or an mbedTLS error) means "not valid".
            (try? MbedTLS.check(mbedtls_ecdsa_verify(group, digest, digest.count, publicPoint, r.pointer, s.pointer))) != nil
        }
    }
}

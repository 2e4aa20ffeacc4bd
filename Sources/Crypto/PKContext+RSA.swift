import CMbedTLS

/// The RSA side of a key context: what an FCM service account's key (RSA 2048, RS256) needs.
extension PKContext {
    /// The sizes a service-account key may have: Google issues 2,048 bits; below that is not safe,
    /// and above 4,096 the DER buffers here would not hold it.
    static let rsaBits = 2048...4096

    /// A fresh RSA key pair (public exponent 65537) from the shared `RandomSource`. A 2,048-bit key
    /// takes from a tenth of a second to a few seconds: callers generate once and keep the file.
    static func generateRSA(bits: Int) throws(CryptoError) -> PKContext {
        precondition(rsaBits.contains(bits), "RSA key size \(bits) outside \(rsaBits)")
        let context = PKContext()
        try MbedTLS.check(mbedtls_pk_setup(context.pointer, mbedtls_pk_info_from_type(MBEDTLS_PK_RSA)), "setting up an RSA key")
        try RandomSource.shared.withRNG { (random, state) throws(CryptoError) in
            try MbedTLS.check(mbedtls_rsa_gen_key(context.rsa, random, state, UInt32(bits), 65537), "generating an RSA key")
        }
        return context
    }

    /// The RSA context inside (`mbedtls_pk_rsa`, a C inline function Swift does not import); valid
    /// only for RSA keys (check `isRSA` first).
    private var rsa: UnsafeMutablePointer<mbedtls_rsa_context> {
        pointer.pointee.pk_ctx.assumingMemoryBound(to: mbedtls_rsa_context.self)
    }

    var isRSA: Bool { mbedtls_pk_get_type(pointer) == MBEDTLS_PK_RSA }

    /// The key's size in bits (the modulus, for RSA).
    var bitLength: Int { mbedtls_pk_get_bitlen(pointer) }

    /// The private key as mbedTLS writes it: PKCS#1 RSAPrivateKey (the inner key of PKCS#8).
    func pkcs1PrivateKeyDER() -> [UInt8] {
        writeDER(capacity: 4096) { buffer, size in MbedTLS.require(mbedtls_pk_write_key_der(pointer, buffer, size), "mbedTLS DER writer") }
    }

    /// The RSASSA-PKCS1-v1_5 signature of a SHA-256 `digest` (RS256): as many bytes as the modulus.
    /// PKCS#1 v1.5 is deterministic; the generator only blinds the private-key operation against
    /// timing side channels, which mbedTLS requires for RSA.
    func signPKCS1v15(digest: [UInt8]) throws(CryptoError) -> [UInt8] {
        var signature = [UInt8](repeating: 0, count: (bitLength + 7) / 8)
        var length = 0
        try signature.withUnsafeMutableBufferPointer { (out) throws(CryptoError) in
            try RandomSource.shared.withRNG { (random, state) throws(CryptoError) in
                try MbedTLS.check(mbedtls_pk_sign(pointer, MBEDTLS_MD_SHA256, digest, digest.count, out.baseAddress, &length, random, state), "RS256 signing")
            }
        }
        precondition(length == signature.count, "an RSA signature is as long as the modulus")
        return signature
    }

    /// Whether `signature` is this key's RSASSA-PKCS1-v1_5 signature of the SHA-256 `digest`.
    func verifyPKCS1v15(digest: [UInt8], signature: [UInt8]) -> Bool {
        // Any failure (a wrong signature, a wrong length, an mbedTLS error) means "not valid".
        (try? MbedTLS.check(mbedtls_pk_verify(pointer, MBEDTLS_MD_SHA256, digest, digest.count, signature, signature.count))) != nil
    }
}

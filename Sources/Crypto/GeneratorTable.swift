import CMbedTLS

/// mbedTLS 2.28 computes an EC group's table of generator multiples (`grp->T`, the
/// `MBEDTLS_ECP_FIXED_POINT_OPTIM` speed-up) on the first signature or verification with a key, and
/// stores it in that key's group without a lock. Two threads doing their first handshake at once
/// with one shared key (a TLS configuration's own key, or a CA key checking the peer's chain) then
/// both write `grp->T`. Computing the table once before the key is shared leaves mbedTLS only
/// reading it afterwards (INTEROP.md: pk contexts are not thread-safe).
enum GeneratorTable {
    /// The group of `key` when it is an EC key; nil for RSA, which keeps its own mutex.
    static func group(of key: UnsafeMutablePointer<mbedtls_pk_context>) -> UnsafeMutablePointer<mbedtls_ecp_group>? {
        let type = mbedtls_pk_get_type(key)
        guard type == MBEDTLS_PK_ECKEY || type == MBEDTLS_PK_ECKEY_DH || type == MBEDTLS_PK_ECDSA,
              let keypair = key.pointee.pk_ctx else { return nil }
        let offset = MemoryLayout<mbedtls_ecp_keypair>.offset(of: \.grp)!
        return (keypair + offset).assumingMemoryBound(to: mbedtls_ecp_group.self)
    }

    /// Whether `key` needs no table (not EC) or already has it.
    static func isReady(_ key: UnsafeMutablePointer<mbedtls_pk_context>) -> Bool {
        guard let group = group(of: key) else { return true }
        return group.pointee.T != nil
    }

    /// Computes the table of an EC `key` (one multiplication of the generator, ≈ 1 ms).
    static func precompute(_ key: UnsafeMutablePointer<mbedtls_pk_context>) throws(MbedTLSCode) {
        guard let group = group(of: key), group.pointee.T == nil else { return }
        let scalar = MPI()
        let product = MbedTLSObject<mbedtls_ecp_point>(initialize: mbedtls_ecp_point_init, free: mbedtls_ecp_point_free)
        try MbedTLS.check(mbedtls_mpi_lset(scalar.pointer, 2))
        let generator = (UnsafeMutableRawPointer(group) + MemoryLayout<mbedtls_ecp_group>.offset(of: \.G)!)
            .assumingMemoryBound(to: mbedtls_ecp_point.self)
        try RandomSource.shared.withRNG { (random, state) throws(MbedTLSCode) in
            try MbedTLS.check(mbedtls_ecp_mul(group, product.pointer, scalar.pointer, generator, random, state))
        }
    }

    /// The pk context inside one certificate of a chain.
    static func key(of certificate: UnsafeMutablePointer<mbedtls_x509_crt>) -> UnsafeMutablePointer<mbedtls_pk_context> {
        (UnsafeMutableRawPointer(certificate) + MemoryLayout<mbedtls_x509_crt>.offset(of: \.pk)!)
            .assumingMemoryBound(to: mbedtls_pk_context.self)
    }

    /// Every certificate of a parsed chain (an initialised but empty chain has none).
    static func certificates(_ chain: UnsafeMutablePointer<mbedtls_x509_crt>) -> [UnsafeMutablePointer<mbedtls_x509_crt>] {
        var out: [UnsafeMutablePointer<mbedtls_x509_crt>] = []
        var next: UnsafeMutablePointer<mbedtls_x509_crt>? = chain
        while let certificate = next, certificate.pointee.version != 0 {
            out.append(certificate)
            next = certificate.pointee.next
        }
        return out
    }
}

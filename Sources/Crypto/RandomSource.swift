import CMbedTLS

/// The process's one seeded mbedTLS CTR_DRBG, for ECDSA signatures, key generation, certificate
/// serials, TLS (`mbedtls_ssl_conf_rng`) and, through `Generator`, `APNsID.random(using:)` and retry jitter.
///
/// Why one shared generator: seeding reads the entropy pool, and mbedTLS's CTR_DRBG carries its own
/// mutex (`MBEDTLS_THREADING_C` is on in Debian's build), so one instance serves every thread.
/// Both contexts live at stable heap addresses for the life of the process, as mbedTLS keeps raw
/// pointers to them (`drbg` points at `entropy`).
public final class RandomSource: @unchecked Sendable {
    /// The shared generator, seeded on first use.
    public static let shared = RandomSource()

    private let entropy: UnsafeMutablePointer<mbedtls_entropy_context>
    /// The CTR_DRBG context, for mbedTLS calls that take `(f_rng, p_rng)`: pass
    /// `RandomSource.function` and this pointer. Never free it.
    public let drbg: UnsafeMutablePointer<mbedtls_ctr_drbg_context>

    /// `mbedtls_ctr_drbg_random`, typed as mbedTLS's `f_rng` parameters expect.
    public static let function: @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int) -> Int32 =
        mbedtls_ctr_drbg_random

    private init() {
        entropy = .allocate(capacity: 1)
        drbg = .allocate(capacity: 1)
        mbedtls_entropy_init(entropy)
        mbedtls_ctr_drbg_init(drbg)
        let personalization = Array("sokuho".utf8)
        let rc = mbedtls_ctr_drbg_seed(drbg, mbedtls_entropy_func, entropy, personalization, personalization.count)
        // Without a seeded generator no signature or key would be safe: refuse to continue.
        precondition(rc == 0, "cannot seed mbedTLS CTR_DRBG from the system entropy: \(MbedTLSLibrary.describe(rc))")
    }

    /// Fills `buffer` with random bytes.
    public func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        // mbedtls_ctr_drbg_random takes at most MBEDTLS_CTR_DRBG_MAX_REQUEST (1024) bytes per call.
        var offset = 0
        while offset < buffer.count {
            let length = min(1024, buffer.count - offset)
            let rc = mbedtls_ctr_drbg_random(drbg, (base + offset).assumingMemoryBound(to: UInt8.self), length)
            precondition(rc == 0, "mbedTLS CTR_DRBG failed: \(MbedTLSLibrary.describe(rc))")
            offset += length
        }
    }

    /// `count` random bytes.
    public func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        out.withUnsafeMutableBytes { fill($0) }
        return out
    }

    /// A random 64-bit value.
    public func next() -> UInt64 {
        var value: UInt64 = 0
        withUnsafeMutableBytes(of: &value) { fill($0) }
        return value
    }

    /// A `RandomNumberGenerator` over the shared source, e.g. `Double.random(in: 0..<1, using: &gen)`
    /// for retry jitter.
    public struct Generator: RandomNumberGenerator, Sendable {
        public init() {}
        public mutating func next() -> UInt64 { RandomSource.shared.next() }
    }
}

import CMbedTLS

/// The process's one seeded mbedTLS CTR_DRBG, for ECDSA signatures, key generation, certificate
/// serials, TLS (`mbedtls_ssl_conf_rng`) and, through `Generator`, `APNsID.random(using:)` and retry jitter.
///
/// Why one shared generator: seeding reads the entropy pool, and mbedTLS's CTR_DRBG carries its own
/// mutex (`MBEDTLS_THREADING_C` is on in Debian's build), so one instance serves every thread.
/// Both contexts live at stable heap addresses for the life of the process, as mbedTLS keeps raw
/// pointers to them (`drbg` points at `entropy`); neither pointer leaves this type except for the
/// duration of `withRNG` or into a TLS configuration that keeps this source alive.
public final class RandomSource: @unchecked Sendable {
    /// The shared generator, seeded on first use.
    public static let shared = RandomSource()

    private let entropy: UnsafeMutablePointer<mbedtls_entropy_context>
    /// The CTR_DRBG context. Stays inside this type: mbedTLS calls that take `(f_rng, p_rng)` get it
    /// through `withRNG`, a TLS configuration through `install(in:)`. Never freed.
    private let drbg: UnsafeMutablePointer<mbedtls_ctr_drbg_context>

    /// `mbedtls_ctr_drbg_random`, typed as mbedTLS's `f_rng` parameters expect.
    typealias RNGFunction = @convention(c) (UnsafeMutableRawPointer?, UnsafeMutablePointer<UInt8>?, Int) -> Int32
    private static let function: RNGFunction = mbedtls_ctr_drbg_random

    private init() {
        entropy = .allocate(capacity: 1)
        drbg = .allocate(capacity: 1)
        mbedtls_entropy_init(entropy)
        mbedtls_ctr_drbg_init(drbg)
        let personalization = Array("sokuho".utf8)
        // Without a seeded generator no signature or key would be safe: refuse to continue.
        MbedTLS.require(mbedtls_ctr_drbg_seed(drbg, mbedtls_entropy_func, entropy, personalization, personalization.count), "cannot seed mbedTLS CTR_DRBG from the system entropy")
    }

    /// Runs `body` with the `(f_rng, p_rng)` pair mbedTLS's randomised calls take (key generation,
    /// signature blinding, certificate writing). The pointer is valid only during `body`.
    func withRNG<Result, Failure: Error>(_ body: (RNGFunction, UnsafeMutableRawPointer) throws(Failure) -> Result) throws(Failure) -> Result {
        try body(Self.function, UnsafeMutableRawPointer(drbg))
    }

    /// Makes `config` draw its randomness from this generator. mbedTLS keeps the pointer for the
    /// life of `config`, so its owner must keep this source alive as long (`shared` lives for the
    /// whole process).
    func install(in config: UnsafeMutablePointer<mbedtls_ssl_config>) {
        mbedtls_ssl_conf_rng(config, Self.function, drbg)
    }

    /// Fills `buffer` with random bytes.
    func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress else { return }
        // mbedtls_ctr_drbg_random takes at most MBEDTLS_CTR_DRBG_MAX_REQUEST (1024) bytes per call.
        var offset = 0
        while offset < buffer.count {
            let length = min(1024, buffer.count - offset)
            MbedTLS.require(mbedtls_ctr_drbg_random(drbg, (base + offset).assumingMemoryBound(to: UInt8.self), length), "mbedTLS CTR_DRBG failed")
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

import CMbedTLS

/// One process-wide mbedTLS CTR-DRBG seeded from the system entropy source. mbedTLS guards a
/// ctr_drbg with its own mutex (MBEDTLS_THREADING_PTHREAD), so every thread may share it.
public final class DRBG: @unchecked Sendable {
    // @unchecked: the contexts are only touched through mbedTLS calls, which lock internally.
    public let context: UnsafeMutablePointer<mbedtls_ctr_drbg_context>
    private let entropy: UnsafeMutablePointer<mbedtls_entropy_context>

    public static let shared = DRBG()

    private init() {
        entropy = .allocate(capacity: 1)
        context = .allocate(capacity: 1)
        mbedtls_entropy_init(entropy)
        mbedtls_ctr_drbg_init(context)
        let personalization = Array("sokuho".utf8)
        let rc = mbedtls_ctr_drbg_seed(context, mbedtls_entropy_func, entropy, personalization, personalization.count)
        precondition(rc == 0, "cannot seed the random generator from the system: \(MbedTLSLibrary.describe(rc))")
    }

    /// `count` random bytes.
    public func bytes(_ count: Int) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        let rc = out.withUnsafeMutableBufferPointer { mbedtls_ctr_drbg_random(context, $0.baseAddress, $0.count) }
        precondition(rc == 0, "ctr_drbg_random failed: \(MbedTLSLibrary.describe(rc))")
        return out
    }
}

import CMbedTLS

/// One mbedTLS context (`mbedtls_pk_context`, `mbedtls_mpi`, `mbedtls_x509write_cert`, …) at a
/// stable heap address, initialised on creation and freed with its owner. mbedTLS keeps raw
/// pointers into its contexts between calls, so they never live in a Swift `var` passed with `&`.
final class MbedTLSObject<Context> {
    let pointer: UnsafeMutablePointer<Context>
    private let free: (UnsafeMutablePointer<Context>?) -> Void

    init(initialize: (UnsafeMutablePointer<Context>?) -> Void, free: @escaping (UnsafeMutablePointer<Context>?) -> Void) {
        pointer = .allocate(capacity: 1)
        initialize(pointer)
        self.free = free
    }

    deinit {
        free(pointer)
        pointer.deallocate()
    }
}

/// A big integer, e.g. an ECDSA signature's r or s, or a certificate serial.
typealias MPI = MbedTLSObject<mbedtls_mpi>

extension MbedTLSObject where Context == mbedtls_mpi {
    convenience init() { self.init(initialize: mbedtls_mpi_init, free: mbedtls_mpi_free) }

    /// Sets the value from big-endian bytes; throws only on allocation failure.
    func read(bigEndian bytes: ArraySlice<UInt8>) throws(MbedTLSCode) {
        try Array(bytes).withUnsafeBufferPointer { (buffer) throws(MbedTLSCode) in try MbedTLS.check(mbedtls_mpi_read_binary(pointer, buffer.baseAddress, buffer.count)) }
    }

    /// The value as exactly `width` big-endian bytes, zero-padded on the left.
    func bigEndian(width: Int) throws(CryptoError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width)
        try out.withUnsafeMutableBufferPointer { (buffer) throws(CryptoError) in try MbedTLS.check(mbedtls_mpi_write_binary(pointer, buffer.baseAddress, width), "writing a big integer") }
        return out
    }
}

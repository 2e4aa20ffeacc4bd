/// The one place an mbedTLS return code becomes a Swift outcome.
///
/// The rule (grep-able): in Sources/Crypto, the `Int32` of every int-returning `mbedtls_*` call is
/// the argument of `MbedTLS.check`, `MbedTLS.count`, `MbedTLS.require` or `MbedTLS.ignore`, on the
/// same line as the call, so
///
///     grep -n 'mbedtls_[a-z0-9_]*(' Sources/Crypto/*.swift | grep -v 'MbedTLS\.\(check\|count\|require\|ignore\)('
///
/// lists only calls that return nothing, a pointer or a value that is not a status (init, free,
/// conf_*, get_*, the x509write setters that return void). `Tests/SourceRuleTests` enforces it.
enum MbedTLS {
    /// Returns when `rc` is 0; otherwise throws it, for the caller to word or to dispatch on.
    static func check(_ rc: Int32) throws(MbedTLSCode) {
        guard rc == 0 else { throw MbedTLSCode(rc) }
    }

    /// Returns when `rc` is 0; otherwise throws `CryptoError.mbedTLSFailure` naming `operation`.
    static func check(_ rc: Int32, _ operation: @autoclosure () -> String) throws(CryptoError) {
        guard rc == 0 else { throw .mbedTLS(operation(), rc) }
    }

    /// Returns when `rc` is 0; otherwise throws the caller's error for it.
    static func check<Failure: Error>(_ rc: Int32, or failure: (Int32) -> Failure) throws(Failure) {
        guard rc == 0 else { throw failure(rc) }
    }

    /// For calls that return a length or a count on success: `rc` when ≥ 0; otherwise throws it.
    static func count(_ rc: Int32) throws(MbedTLSCode) -> Int {
        guard rc >= 0 else { throw MbedTLSCode(rc) }
        return Int(rc)
    }

    /// For calls that cannot fail as this code uses them (buffers sized for the result, a seeded
    /// generator): `rc` when ≥ 0; otherwise stops the process with `what` and mbedTLS's text, since
    /// continuing would be unsafe or wrong.
    @discardableResult
    static func require(_ rc: Int32, _ what: StaticString) -> Int {
        precondition(rc >= 0, "\(what): \(MbedTLSLibrary.describe(rc))")
        return Int(rc)
    }

    /// For calls whose failure nothing can act upon (a best-effort close_notify on a socket about to
    /// close): the code is dropped, and `why` says why that is right.
    static func ignore(_ rc: Int32, because why: StaticString) {}
}

/// A failed mbedTLS call's code (negative), with mbedTLS's own text as its description.
struct MbedTLSCode: Error, Equatable, CustomStringConvertible {
    let code: Int32

    init(_ code: Int32) { self.code = code }

    var description: String { MbedTLSLibrary.describe(code) }
}

import CLibEvent

/// The checked wrappers every libevent call of this module goes through (Tests/SourceRuleTests reads
/// the sources and fails on a call whose status is dropped): 0 is success, -1 failure; a NULL pointer
/// is a failure. The failure names the call.
enum LibEvent {
    struct Failure: Error, CustomStringConvertible {
        let call: String
        var description: String { "\(call) failed" }
    }

    /// A call that returns 0 on success, -1 on failure.
    static func check(_ call: StaticString, _ rc: Int32) throws(Failure) {
        guard rc == 0 else { throw Failure(call: "\(call)") }
    }

    /// A call that returns a byte count which must be `expected`.
    static func count(_ call: StaticString, _ rc: Int, expected: Int) throws(Failure) {
        guard rc == expected else { throw Failure(call: "\(call)") }
    }

    /// A call that returns an object, NULL on failure.
    static func require<T>(_ call: StaticString, _ pointer: T?) throws(Failure) -> T {
        guard let pointer else { throw Failure(call: "\(call)") }
        return pointer
    }

    /// A call on the loop thread whose failure leaves nothing to hand the error to (the loop itself).
    static func mustSucceed(_ call: StaticString, _ rc: Int32) {
        precondition(rc == 0, "\(call) failed")
    }

    /// "2.1.12-stable", as the linked library reports it.
    static var version: String { String(cString: event_get_version()) }
}

/// The linked libevent, for `sokuho version`.
public enum LibEventLibrary {
    public static var version: String { LibEvent.version }
}

import CLMDB

/// The one way this module looks at an LMDB return code. Every `mdb_*` call that returns an
/// `int` is written as the argument of one of these, on the same line, so the rule is grep-able:
///
///     grep -nE 'mdb_[a-z_]+\(' Sources/TokenStore/*.swift | grep -v 'LMDB\.[a-z]*(mdb_'
///
/// lists only the calls that return no status (`mdb_txn_abort`, `mdb_cursor_close`,
/// `mdb_env_close`, `mdb_strerror`, `mdb_version`).
enum LMDB {
    /// Throws the store error for any code but 0. `what` names the call (for the precondition
    /// variant's message and for a reader of the code); the thrown error keeps LMDB's own text.
    static func check(_ rc: Int32, _ what: StaticString, at path: @autoclosure () -> String) throws(StoreError) {
        if rc != 0 { throw StoreError.from(rc, path: path()) }
    }

    /// For calls where one non-zero code is a normal answer (`MDB_NOTFOUND` from a lookup,
    /// `MDB_KEYEXIST` from a put with `MDB_NOOVERWRITE`): false for `expected`, true for 0, and
    /// throws for anything else.
    static func succeeded(_ rc: Int32, _ what: StaticString, unless expected: Int32,
                          at path: @autoclosure () -> String) throws(StoreError) -> Bool {
        if rc == expected { return false }
        try check(rc, what, at: path())
        return true
    }

    /// For calls that cannot fail on a valid, open environment (`mdb_env_info`, `mdb_env_stat`
    /// only reject a null argument): a failure means this process broke the environment, and
    /// going on would report sizes that are not there.
    static func expect(_ rc: Int32, _ what: StaticString) {
        precondition(rc == 0, "\(what) failed: \(String(cString: mdb_strerror(rc))) (error \(rc))")
    }
}

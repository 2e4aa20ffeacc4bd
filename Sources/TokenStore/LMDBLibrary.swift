import CLMDB

/// Facts about the LMDB library linked into this binary, as it reports them at run time.
public enum LMDBLibrary {
    /// "major.minor.patch" as LMDB reports it, e.g. "0.9.24".
    public static var version: String {
        var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
        _ = mdb_version(&major, &minor, &patch) // returns LMDB's version text, not a status
        return "\(major).\(minor).\(patch)"
    }
}

import CNghttp2

/// Facts about the nghttp2 library linked into this binary, as it reports them at run time.
public enum Nghttp2Library {
    /// The version string nghttp2 reports, e.g. "1.52.0".
    public static var version: String {
        guard let info = nghttp2_version(0), let text = info.pointee.version_str else { return "unknown" }
        return String(cString: text)
    }
}

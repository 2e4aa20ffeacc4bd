/// Sokuho's own version. Bumped by hand on release; the .deb takes it from here (Packaging/build-deb
/// reads this file, since the binary may not run where the package is built). In Vocabulary so that
/// `sokuho version` and the daemon's `sokuho_build_info` metric read the one value.
public enum SokuhoVersion {
    public static let current = "0.1.0"
}

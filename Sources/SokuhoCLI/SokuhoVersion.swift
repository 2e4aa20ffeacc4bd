/// Sokuho's own version. Bumped by hand on release; the .deb takes it from here.
public enum SokuhoVersion {
    public static let current = "0.1.0"
}

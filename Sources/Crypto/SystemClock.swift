import Glibc

/// Wall-clock Unix seconds: the default clock of token generations and token verification, which
/// take their clock as a closure so tests can move time by hand.
public enum SystemClock {
    public static func seconds() -> Int64 { Int64(time(nil)) }
}

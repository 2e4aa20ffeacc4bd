#if canImport(Glibc)
import Glibc
#endif

/// Facts about the machine the pool sizes itself by.
public enum SystemInfo {
    /// Online CPU cores.
    public static var cores: Int32 { Int32(max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }
}

/// Which APNs environment a token belongs to: a sandbox token is unknown to production and vice
/// versa, so the environment is part of every token's identity.
public enum PushEnvironment: UInt8, Sendable, CaseIterable, Comparable {
    case production = 1
    case sandbox = 2

    /// The name used in files and on the command line.
    public var name: String { self == .production ? "production" : "sandbox" }

    public init?(name: String) {
        switch name {
        case "production": self = .production
        case "sandbox": self = .sandbox
        default: return nil
        }
    }

    public static func < (lhs: PushEnvironment, rhs: PushEnvironment) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Where an APNs service listens (APNS.md §1).
public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    public var description: String { "\(host):\(port)" }
}

/// The APNs environment a token, channel and connection belong to. A development token sent to
/// production answers `BadDeviceToken`, and channels exist in one environment only.
public enum Environment: String, Sendable, CaseIterable {
    case sandbox
    case production

    /// Parses a configuration value: `sandbox` (or Apple's other word for it, `development`) or `production`.
    public init(name: String) throws(ValidationError) {
        switch name.lowercased() {
        case "sandbox", "development": self = .sandbox
        case "production": self = .production
        default:
            throw ValidationError(field: "environment", "'\(HeaderValueText.printable(name))' is not an APNs environment; use sandbox or production")
        }
    }

    /// Device pushes (`/3/device`) and broadcasts (`/4/broadcasts`) share this host.
    public var pushHost: String {
        switch self {
        case .sandbox: "api.sandbox.push.apple.com"
        case .production: "api.push.apple.com"
        }
    }

    /// Device push and broadcast on port 443.
    public var devicePush: Endpoint { Endpoint(host: pushHost, port: 443) }

    /// Device push on 2197, Apple's alternative for firewalls that block 443 (device push only).
    public var devicePushAlternate: Endpoint { Endpoint(host: pushHost, port: 2197) }

    /// Broadcast sends go to the normal push host on 443 (the `api-broadcast.*` host in one Apple
    /// sample is unconfirmed; APNS.md §1).
    public var broadcast: Endpoint { devicePush }

    /// Channel management (create, read, list, delete): its own host, port 2195 (sandbox) or 2196 (production).
    public var channelManagement: Endpoint {
        switch self {
        case .sandbox: Endpoint(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
        case .production: Endpoint(host: "api-manage-broadcast.push.apple.com", port: 2196)
        }
    }
}

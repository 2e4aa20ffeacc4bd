/// Where an APNs service listens (APNS.md §1).
public struct Endpoint: Sendable, Hashable, CustomStringConvertible {
    public let host: String
    public let port: Int

    public init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    /// Parses "host:port" or "[v6]:port" (a configuration value, a command-line option); the error
    /// names `field` so a message says which option or setting to fix.
    /// `ports`: 0…65535 where 0 means "the system picks one" (a listening address).
    public init(parsing text: String, field: String, ports: ClosedRange<Int> = 1...65535) throws(ValidationError) {
        var host = Substring(text)
        var portText: Substring?
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            let rest = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if rest.hasPrefix(":") { portText = rest.dropFirst() }
        } else if let colon = host.lastIndex(of: ":"), host.firstIndex(of: ":") == colon {
            portText = host[host.index(after: colon)...]
            host = host[..<colon]
        }
        guard !host.isEmpty, let portText, let port = Int(portText), ports.contains(port) else {
            throw ValidationError(field: field, "must be HOST:PORT with a port from \(ports.lowerBound) to \(ports.upperBound) (e.g. 127.0.0.1:8443 or [::1]:8443), not '\(HeaderValueText.printable(text))'")
        }
        self.init(host: String(host), port: port)
    }

    /// "host:port", with an IPv6 host in brackets so the text parses back to the same endpoint.
    public var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
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

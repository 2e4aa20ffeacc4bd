/// An `https://host[:port]/path` URL taken apart: a service account's `token_uri`, where the
/// access-token request goes (Google's `oauth2.googleapis.com/token`, or the simulator's
/// `https://127.0.0.1:PORT/token`). Nothing else: no user info, query or fragment.
public struct HTTPSEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// A name or an address (IPv6 without its brackets).
    public let host: String
    public let port: Int
    /// Starts with `/`.
    public let path: String

    public init(host: String, port: Int = 443, path: String) {
        self.host = host
        self.port = port
        self.path = path
    }

    /// Parses `text`; nil for anything but an https URL of that shape.
    public init?(_ text: String) {
        let scheme = "https://"
        guard text.hasPrefix(scheme) else { return nil }
        let rest = text.dropFirst(scheme.count)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = slash == rest.endIndex ? "/" : String(rest[slash...])
        guard !authority.isEmpty, !authority.contains("@"), !path.contains("?"), !path.contains("#"),
              !path.contains(" ") else { return nil }
        var host = Substring(authority)
        var port = 443
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return nil }
            let after = host[host.index(after: close)...]
            host = host[host.index(after: host.startIndex)..<close]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let number = Int(after.dropFirst()) else { return nil }
                port = number
            }
        } else if let colon = host.lastIndex(of: ":") {
            guard let number = Int(host[host.index(after: colon)...]) else { return nil }
            port = number
            host = host[..<colon]
        }
        guard !host.isEmpty, (1...65535).contains(port) else { return nil }
        self.init(host: String(host), port: port, path: path)
    }

    /// The URL again, the port written only when it is not 443.
    public var description: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return "https://" + name + (port == 443 ? "" : ":\(port)") + path
    }
}

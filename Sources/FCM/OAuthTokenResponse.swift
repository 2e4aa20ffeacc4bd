import JSONCore

/// An access token as the token endpoint granted it: sent as `authorization: Bearer <value>` on
/// every FCM send until about `lifetime` after it was granted.
public struct AccessToken: Sendable, Equatable, CustomStringConvertible {
    public let value: String
    /// `expires_in` (Google: 3599 s). The sender refreshes before it runs out.
    public let lifetime: Duration

    public init(value: String, lifetime: Duration) {
        self.value = value
        self.lifetime = lifetime
    }

    /// The `authorization` header value.
    public var authorization: String { "Bearer " + value }

    /// Never the token itself: its last 6 characters, for logs.
    public var description: String { "AccessToken(…\(value.suffix(6)), \(lifetime))" }
}

/// An OAuth error body, `{"error":"invalid_grant","error_description":"…"}` (RFC 6749 §5.2).
public struct OAuthErrorBody: Sendable, Equatable {
    /// `invalid_grant`, `invalid_scope`, `unsupported_grant_type`, …
    public let error: String
    public let errorDescription: String?

    public init(error: String, errorDescription: String?) {
        self.error = error
        self.errorDescription = errorDescription
    }

    /// The body, compact JSON (what the simulator answers).
    public var json: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("error"); writer.string(error)
        if let errorDescription { writer.key("error_description"); writer.string(errorDescription) }
        writer.endObject()
        return writer.bytes
    }
}

/// What the token endpoint answered, as one value: a token, a refusal, or something that is
/// neither (a proxy's HTML page, a truncated body). Members the sender does not use (`scope`,
/// `id_token`) are ignored: Google's answer may grow, and nothing in it needs checking but these.
public enum OAuthTokenResponse: Sendable, Equatable {
    case granted(AccessToken)
    case refused(status: Int, OAuthErrorBody)
    case malformed(status: Int, detail: String)

    public init<Body: Collection>(status: Int, body: Body) where Body.Element == UInt8 {
        guard let json = try? JSONParser.parse(body), json.isObject else {
            self = .malformed(status: status, detail: "the body is not a JSON object")
            return
        }
        guard status == 200 else {
            guard let error = json["error"]?.stringValue else {
                self = .malformed(status: status, detail: "no \"error\" member in the refusal")
                return
            }
            self = .refused(status: status, OAuthErrorBody(error: error, errorDescription: json["error_description"]?.stringValue))
            return
        }
        // A header value: visible ASCII only, so it can never split or smuggle a header.
        guard let value = json["access_token"]?.stringValue, !value.isEmpty,
              value.utf8.allSatisfy({ (0x21...0x7e).contains($0) }) else {
            self = .malformed(status: status, detail: "no usable \"access_token\"")
            return
        }
        guard let seconds = json["expires_in"]?.int64Value, seconds > 0 else {
            self = .malformed(status: status, detail: "\"expires_in\" is not a positive integer")
            return
        }
        // RFC 6749 §5.1: the type is case-insensitive; only Bearer is usable on FCM.
        guard json["token_type"]?.stringValue?.lowercased() == "bearer" else {
            self = .malformed(status: status, detail: "\"token_type\" is not Bearer")
            return
        }
        self = .granted(AccessToken(value: value, lifetime: .seconds(seconds)))
    }
}

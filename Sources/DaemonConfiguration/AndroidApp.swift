import APNs

/// An app's Android side (`apps[].android`): its Firebase project's service account and the FCM
/// pool. The event's `app` stays the bundle ID and its `environment` picks the `apps[]` entry, so
/// Android installations registered under that environment are what a sandbox or production
/// event reaches.
public struct AndroidApp: Sendable, Equatable {
    /// The Android application ID (`com.example.eew`): checked, named in messages and metrics.
    public var package: String
    /// Google's service-account JSON, unchanged; only the path is kept here, never the key.
    public var serviceAccountFile: String
    /// The FCM host instead of Google's (the simulator's), or nil for `fcm.googleapis.com:443`.
    public var fcmHost: Endpoint?
    /// The OAuth token host instead of the one in the file's `token_uri` (its path is kept), or nil.
    public var tokenHost: Endpoint?
    /// A CA to trust instead of the system bundle for both hosts (the simulator's `ca.pem`), or nil.
    public var caFile: String?
    public var connections: Int
    /// Messages a minute this node sends to the project, retries and errors included (Google's
    /// published quota is 600,000 a minute per project: each node of a cluster takes its share).
    public var messagesPerMinute: Int

    public init(package: String, serviceAccountFile: String, fcmHost: Endpoint? = nil, tokenHost: Endpoint? = nil, caFile: String? = nil,
                connections: Int = AndroidApp.defaultConnections, messagesPerMinute: Int = AndroidApp.defaultMessagesPerMinute) {
        self.package = package
        self.serviceAccountFile = serviceAccountFile
        self.fcmHost = fcmHost
        self.tokenHost = tokenHost
        self.caFile = caFile
        self.connections = connections
        self.messagesPerMinute = messagesPerMinute
    }

    public static let defaultConnections = 4
    public static let connectionsRange = 1...256
    public static let defaultMessagesPerMinute = 600_000
    public static let messagesPerMinuteRange = 1...100_000_000

    /// An Android application ID: at least two dot-separated segments, each a letter followed by
    /// letters, digits or underscores (Android's rule for `applicationId`).
    public static func isPackageName(_ text: String) -> Bool {
        let segments = text.split(separator: ".", omittingEmptySubsequences: false)
        guard segments.count >= 2, text.utf8.count <= 255 else { return false }
        return segments.allSatisfy { segment in
            guard let first = segment.unicodeScalars.first, first.isASCII, first.properties.isAlphabetic else { return false }
            return segment.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "_") }
        }
    }
}

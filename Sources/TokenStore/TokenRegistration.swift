import APNs
/// "This installation has this token and follows these topics": one line of an import file, one
/// call of the registration API. Applying it sets the token of `kind` (rotating out an older one)
/// and replaces that kind's topics. A kind of the other `Platform` than the installation's tokens
/// is refused when it is applied (`Installation.checkPlatform`).
public struct TokenRegistration: Sendable, Equatable {
    public var installationID: String
    public var app: String
    public var environment: Environment
    public var kind: TokenKind
    public var token: [UInt8]
    public var topics: [TopicSubscription]
    /// The new secret hash, or nil to keep the stored one.
    public var secretHash: [UInt8]?
    /// When the phone registered the token (ms since 1970): what a 410's timestamp is compared
    /// with. An import line carries it (an export writes it), and the store keeps exactly that
    /// value. Nil means "not known here": a token new to the store is stamped with the
    /// operation's time, and a token already stored keeps its stored time. A re-sync from another
    /// system is not the phone registering again; stamping it "now" would make every 410 look
    /// older than the registration, and no dead token would ever be pruned. The registration API
    /// (the phone itself) passes the time of its request.
    public var registeredAt: UInt64?
    /// Whether the phone runs iOS 18 or later (see `Installation.broadcast`), or nil to keep the
    /// stored value (false for a new installation): a line or request that does not say must not
    /// make an iOS 18 phone look like iOS 17, nor the reverse. Always nil for an `fcm` token.
    public var broadcast: Bool?

    public init(installationID: String, app: String, environment: Environment, kind: TokenKind,
                token: [UInt8], topics: [TopicSubscription], secretHash: [UInt8]? = nil, registeredAt: UInt64? = nil,
                broadcast: Bool? = nil) {
        self.installationID = installationID
        self.app = app
        self.environment = environment
        self.kind = kind
        self.token = token
        self.topics = topics
        self.secretHash = secretHash
        self.registeredAt = registeredAt
        self.broadcast = broadcast
    }

    /// Checks every field against `StoreLimits`; the message names the field.
    public func validate() throws(StoreError) {
        try StoreLimits.checkName(installationID, field: "installationId")
        try StoreLimits.checkName(app, field: "app")
        try StoreLimits.checkToken(token, kind: kind)
        // iOS 18's broadcast channels have no Android counterpart: a line or request saying
        // either way for an FCM token is a mistake to name, not a flag to store.
        if kind == .fcm, broadcast != nil {
            throw StoreError.invalid("broadcast is for iOS installations (iOS 18 or later); leave it out for an fcm token")
        }
        guard topics.count <= StoreLimits.maximumTopics else {
            throw StoreError.invalid("topics lists \(topics.count) topics; at most \(StoreLimits.maximumTopics) are allowed")
        }
        for topic in topics { try StoreLimits.checkName(topic.name, field: "topic name") }
        // Most installations follow a handful of topics: compare pairwise, hash only long lists.
        let duplicate: String?
        if topics.count <= 16 {
            duplicate = topics.indices.lazy.compactMap { i in
                topics[(i + 1)...].contains { $0.name == topics[i].name } ? topics[i].name : nil
            }.first
        } else {
            var seen = Set<String>()
            duplicate = topics.first { !seen.insert($0.name).inserted }?.name
        }
        if let duplicate { throw StoreError.invalid("topic '\(duplicate)' is listed twice") }
    }
}

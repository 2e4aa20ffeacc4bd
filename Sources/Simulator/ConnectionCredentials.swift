import Crypto

/// The provider tokens one connection has presented, and APNs' per-connection rules on them
/// (APNS.md §5): one team and one key per connection, and no switch to another token within
/// 20 minutes of starting to use the current one. Pure state, so the rules are tested without sockets.
struct ConnectionCredentials {
    private(set) var teamID: String?
    private(set) var keyID: String?
    private(set) var jwt: String?
    /// When the connection started using `jwt` (Unix seconds).
    private(set) var jwtSince: Int64 = 0

    /// The shortest time a connection must keep one token before it may present another.
    static let minimumTokenLifetime: Int64 = 20 * 60

    /// Admits a request whose token `verified` (text `jwt`) already passed signature and age checks,
    /// or refuses it the way APNs does; only an admitted token becomes the connection's current one.
    mutating func admit(_ verified: VerifiedProviderToken, jwt: String, now: Int64) throws(RequestRules.Refusal) {
        if let team = teamID, team != verified.teamID {
            throw RequestRules.Refusal(reason: .invalidProviderToken, detail: "this connection belongs to team \(team)")
        }
        if let key = keyID, key != verified.keyID {
            throw RequestRules.Refusal(reason: .unrelatedKeyIdInToken, detail: "this connection uses key \(key)")
        }
        if let current = self.jwt, current != jwt, now - jwtSince < Self.minimumTokenLifetime {
            throw RequestRules.Refusal(reason: .tooManyProviderTokenUpdates,
                                       detail: "the current token has been in use for \(now - jwtSince) s; keep it 20 minutes")
        }
        if self.jwt != jwt {
            self.jwt = jwt
            jwtSince = now
        }
        teamID = verified.teamID
        keyID = verified.keyID
    }
}

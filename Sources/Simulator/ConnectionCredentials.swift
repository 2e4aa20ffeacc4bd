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
        try check(verified, jwt: jwt, now: now, limitSwitches: true)
        adopt(verified, jwt: jwt, now: now)
    }

    /// `admit`'s refusals without adopting the token. With `limitSwitches` false the 20-minute rule
    /// is left to the caller (`KeyTokenUpdates`, when changes are counted per key rather than per
    /// connection), who adopts the token once its own rule passed too.
    func check(_ verified: VerifiedProviderToken, jwt: String, now: Int64, limitSwitches: Bool) throws(RequestRules.Refusal) {
        if let team = teamID, team != verified.teamID {
            throw RequestRules.Refusal(reason: .invalidProviderToken, detail: "this connection belongs to team \(team)")
        }
        if let key = keyID, key != verified.keyID {
            throw RequestRules.Refusal(reason: .unrelatedKeyIdInToken, detail: "this connection uses key \(key)")
        }
        if limitSwitches, let current = self.jwt, current != jwt, now - jwtSince < Self.minimumTokenLifetime {
            throw RequestRules.Refusal(reason: .tooManyProviderTokenUpdates,
                                       detail: "the current token has been in use for \(now - jwtSince) s; keep it 20 minutes")
        }
    }

    /// Makes `jwt` the connection's current token (its clock restarts only when the token changes).
    mutating func adopt(_ verified: VerifiedProviderToken, jwt: String, now: Int64) {
        if self.jwt != jwt {
            self.jwt = jwt
            jwtSince = now
        }
        teamID = verified.teamID
        keyID = verified.keyID
    }
}

/// APNs' 20-minute rule counted per signing key over every connection (`ProviderTokenScope.key`):
/// the first token seen for a (team, key ID) is free; each token not seen before for it is a change,
/// and a change within 20 minutes of the previous change is refused. A token already seen may be
/// presented again on any connection (long-lived connections keep their token while newer
/// connections use a newer one). Pure state with `now` passed in, so the rule is tested without
/// sockets or waiting; the simulator shares one behind a lock.
struct KeyTokenUpdates {
    private struct KeyState {
        /// Tokens seen for the key, with when each was first seen (Unix seconds).
        var known: [String: Int64] = [:]
        /// When the last change was admitted (nil: the key has had only its first token).
        var lastChange: Int64?
    }

    private var keys: [String: KeyState] = [:]

    /// Tokens are forgotten this long after they were first seen: APNs refuses tokens older than an
    /// hour anyway, and the table must not grow with every token a long run signs.
    static let memory: Int64 = 60 * 60

    mutating func admit(teamID: String, keyID: String, jwt: String, now: Int64) throws(RequestRules.Refusal) {
        let name = teamID + "." + keyID
        var state = keys[name] ?? KeyState()
        if state.known[jwt] != nil { return }
        state.known = state.known.filter { now - $0.value < Self.memory }
        if !state.known.isEmpty || state.lastChange != nil {
            if let last = state.lastChange, now - last < ConnectionCredentials.minimumTokenLifetime {
                throw RequestRules.Refusal(reason: .tooManyProviderTokenUpdates,
                                           detail: "key \(keyID) of team \(teamID) got a new token \(now - last) s ago; one new token per 20 minutes")
            }
            state.lastChange = now
        }
        state.known[jwt] = now
        keys[name] = state
    }
}

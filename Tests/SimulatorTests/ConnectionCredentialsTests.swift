import APNs
import Crypto
@testable import Simulator
import Testing
import Vocabulary

/// APNs' per-connection token rules, with real ES256 tokens and no sockets.
@Suite struct ConnectionCredentialsTests {
    let key: SigningKey
    let verifier: ProviderTokenVerifier
    let now = WallClock.seconds()

    init() throws {
        key = try SigningKey.generate()
        let other = try SigningKey.generate()
        verifier = ProviderTokenVerifier(trusting: [
            .init(keyID: "KEYAAAAAAA", teamID: "TEAMAAAAAA", key: key.verifyingKey),
            .init(keyID: "KEYBBBBBBB", teamID: "TEAMAAAAAA", key: other.verifyingKey),
            .init(keyID: "KEYCCCCCCC", teamID: "TEAMCCCCCC", key: other.verifyingKey),
        ])
        otherKey = other
    }

    let otherKey: SigningKey

    func token(keyID: String = "KEYAAAAAAA", teamID: String = "TEAMAAAAAA", issuedAt: Int64) throws -> (VerifiedProviderToken, String) {
        let signingKey = keyID == "KEYAAAAAAA" ? key : otherKey
        let jwt = try ProviderTokenSigner(key: signingKey, keyID: keyID, teamID: teamID).token(issuedAt: issuedAt)
        return (try verifier.verify(jwt: jwt), jwt)
    }

    func admit(_ credentials: inout ConnectionCredentials, _ token: (VerifiedProviderToken, String), at time: Int64) -> Reason? {
        do throws(RequestRules.Refusal) { try credentials.admit(token.0, jwt: token.1, now: time); return nil } catch { return error.reason }
    }

    @Test func aNewTokenWithinTwentyMinutesIsTooManyUpdates() throws {
        var credentials = ConnectionCredentials()
        let first = try token(issuedAt: now - 100), second = try token(issuedAt: now - 50)
        #expect(first.1 != second.1)
        #expect(admit(&credentials, first, at: now) == nil)
        #expect(admit(&credentials, first, at: now + 60) == nil)
        #expect(admit(&credentials, second, at: now + 60) == .tooManyProviderTokenUpdates)
        #expect(admit(&credentials, second, at: now + 20 * 60 - 1) == .tooManyProviderTokenUpdates)
        // The refused token did not become current: the first still works.
        #expect(admit(&credentials, first, at: now + 20 * 60 - 1) == nil)
        #expect(admit(&credentials, second, at: now + 20 * 60) == nil)
        #expect(admit(&credentials, first, at: now + 20 * 60 + 1) == .tooManyProviderTokenUpdates)
    }

    @Test func anotherKeyOnTheConnectionIsUnrelatedKeyId() throws {
        var credentials = ConnectionCredentials()
        #expect(admit(&credentials, try token(issuedAt: now), at: now) == nil)
        #expect(admit(&credentials, try token(keyID: "KEYBBBBBBB", issuedAt: now), at: now + 30 * 60) == .unrelatedKeyIdInToken)
    }

    @Test func anotherTeamOnTheConnectionIsInvalidProviderToken() throws {
        var credentials = ConnectionCredentials()
        #expect(admit(&credentials, try token(issuedAt: now), at: now) == nil)
        #expect(admit(&credentials, try token(keyID: "KEYCCCCCCC", teamID: "TEAMCCCCCC", issuedAt: now), at: now + 30 * 60)
                == .invalidProviderToken)
    }
}

/// The 20-minute rule counted per signing key over all connections (`ProviderTokenScope.key`),
/// with the clock passed in.
@Suite struct KeyTokenUpdatesTests {
    let now: Int64 = 1_700_000_000

    func admit(_ updates: inout KeyTokenUpdates, _ jwt: String, keyID: String = "KEYAAAAAAA", at time: Int64) -> Reason? {
        do throws(RequestRules.Refusal) {
            try updates.admit(teamID: "TEAMAAAAAA", keyID: keyID, jwt: jwt, now: time)
            return nil
        } catch { return error.reason }
    }

    @Test("the first token of a key is free, the first new token is allowed, a second new token within 20 minutes of that change is refused")
    func secondChangeWithinTwentyMinutesIsRefused() {
        var updates = KeyTokenUpdates()
        #expect(admit(&updates, "A", at: now) == nil)
        #expect(admit(&updates, "B", at: now + 1) == nil)
        #expect(admit(&updates, "C", at: now + 2) == .tooManyProviderTokenUpdates)
        // The refused token was not remembered: it is still a change at the next attempt.
        #expect(admit(&updates, "C", at: now + 1 + 20 * 60 - 1) == .tooManyProviderTokenUpdates)
        #expect(admit(&updates, "C", at: now + 1 + 20 * 60) == nil)
        #expect(admit(&updates, "D", at: now + 1 + 20 * 60 + 1) == .tooManyProviderTokenUpdates)
    }

    @Test("a token already admitted for the key may be presented again, and other keys are counted apart")
    func knownTokensAndOtherKeysAreNotChanges() {
        var updates = KeyTokenUpdates()
        #expect(admit(&updates, "A", at: now) == nil)
        #expect(admit(&updates, "B", at: now + 1) == nil)
        #expect(admit(&updates, "A", at: now + 2) == nil)
        #expect(admit(&updates, "B", at: now + 3) == nil)
        #expect(admit(&updates, "X", keyID: "KEYBBBBBBB", at: now + 4) == nil)
        #expect(admit(&updates, "Y", keyID: "KEYBBBBBBB", at: now + 5) == nil)
        #expect(admit(&updates, "Z", keyID: "KEYBBBBBBB", at: now + 6) == .tooManyProviderTokenUpdates)
    }
}

import APNs
import Crypto
@testable import Simulator
import Testing

/// APNs' per-connection token rules, with real ES256 tokens and no sockets.
@Suite struct ConnectionCredentialsTests {
    let key: SigningKey
    let verifier: ProviderTokenVerifier
    let now = SystemClock.seconds()

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

import FCM
import JSONCore
import Testing

/// The assertion's header and claims as bytes, exactly as Google's libraries write their fields.
@Suite struct AssertionTests {
    let account: ServiceAccount = {
        do { return try ServiceAccount(json: ServiceAccountTests.download()) } catch { preconditionFailure("\(error)") }
    }()

    @Test func theHeaderNamesRS256AndTheKey() {
        #expect(String(decoding: account.assertionHeader, as: UTF8.self)
            == #"{"alg":"RS256","typ":"JWT","kid":"0123456789abcdef0123456789abcdef01234567"}"#)
    }

    @Test func theClaimsNameTheAccountTheScopeTheTokenURIAndAnHour() throws {
        let claims = try account.assertionClaims(issuedAt: 1_787_400_000)
        #expect(String(decoding: claims, as: UTF8.self) == #"{"iss":"firebase-adminsdk-x1y2z@eew-app-1a2b3.iam.gserviceaccount.com","#
            + #""scope":"https://www.googleapis.com/auth/firebase.messaging","aud":"https://oauth2.googleapis.com/token","#
            + #""iat":1787400000,"exp":1787403600}"#)
        let short = try JSONParser.parse(try account.assertionClaims(issuedAt: 100, lifetime: .seconds(60)))
        #expect(short["exp"]?.int64Value == 160)
    }

    @Test(arguments: [Duration.seconds(3601), .zero, .milliseconds(1500), .seconds(-5)])
    func anAssertionLivesOneSecondToAnHourInWholeSeconds(lifetime: Duration) {
        #expect(throws: FCMValidationError.self) { try account.assertionClaims(issuedAt: 100, lifetime: lifetime) }
    }
}

import FCM
import Testing

/// The token exchange's form body and answers.
@Suite struct OAuthTests {
    @Test func theFormBodyEscapesTheGrantTypeAsAFormMust() {
        let body = String(decoding: OAuthTokenRequest.body(assertion: "eyJh.eyJp.c2ln-_"), as: UTF8.self)
        #expect(body == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=eyJh.eyJp.c2ln-_")
        let decoded = FormEncoding.decode(Array(body.utf8))
        #expect(decoded?.map(\.name) == ["grant_type", "assertion"])
        #expect(decoded?.map(\.value) == [OAuthTokenRequest.grantType, "eyJh.eyJp.c2ln-_"])
    }

    @Test func formEncodingRoundTripsEveryByteAndRefusesBrokenEscapes() {
        let text = "a b+c&d=e/é%~*-._"
        let encoded = FormEncoding.encode([("k y", text)])
        #expect(String(decoding: encoded, as: UTF8.self) == "k+y=a+b%2Bc%26d%3De%2F%C3%A9%25%7E*-._")
        #expect(FormEncoding.decode(encoded)?.first?.value == text)
        for broken in ["a=%", "a=%4", "a=%zz", "a=%ff"] { #expect(FormEncoding.decode(Array(broken.utf8)) == nil, "\(broken)") }
    }

    @Test func aGrantIsReadIntoAnAccessTokenThatNeverPrintsItself() {
        let body = Array(#"{"access_token":"ya29.c.b0Aaek","expires_in":3599,"token_type":"Bearer","scope":"x"}"#.utf8)
        guard case let .granted(token) = OAuthTokenResponse(status: 200, body: body) else { Issue.record("not granted"); return }
        #expect(token == AccessToken(value: "ya29.c.b0Aaek", lifetime: .seconds(3599)))
        #expect(token.authorization == "Bearer ya29.c.b0Aaek")
        #expect(!"\(token)".contains("ya29"))
    }

    @Test func googlesRefusalIsReadAndTheSimulatorWritesItTheSameWay() {
        let refusal = OAuthErrorBody(error: "invalid_grant", errorDescription: "Invalid JWT Signature.")
        #expect(String(decoding: refusal.json, as: UTF8.self) == #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#)
        #expect(OAuthTokenResponse(status: 400, body: refusal.json) == .refused(status: 400, refusal))
    }

    @Test(arguments: [
        (200, #"{"expires_in":3599,"token_type":"Bearer"}"#, "access_token"),
        (200, #"{"access_token":"a b","expires_in":3599,"token_type":"Bearer"}"#, "access_token"),
        (200, #"{"access_token":"t","expires_in":0,"token_type":"Bearer"}"#, "expires_in"),
        (200, #"{"access_token":"t","expires_in":"3599","token_type":"Bearer"}"#, "expires_in"),
        (200, #"{"access_token":"t","expires_in":3599,"token_type":"MAC"}"#, "token_type"),
        (502, "<html>Bad Gateway</html>", "not a JSON object"),
        (400, #"{"message":"no"}"#, "\"error\""),
    ])
    func anythingElseIsMalformedNamingWhat(status: Int, body: String, says: String) {
        guard case let .malformed(answered, detail) = OAuthTokenResponse(status: status, body: Array(body.utf8)) else {
            Issue.record("\(body) was not malformed"); return
        }
        #expect(answered == status && detail.contains(says), "\(detail)")
    }
}

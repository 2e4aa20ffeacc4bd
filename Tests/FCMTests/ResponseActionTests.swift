import FCM
import Testing

/// The return-code rules (FCM.md, "Errors"), one row per answer FCM gives: one action each.
@Suite struct ResponseActionTests {
    struct Row: Sendable, CustomTestStringConvertible {
        let status: Int
        let statusName: String?
        let errorCode: String?
        let field: String?
        /// The error's message ("m" when the row does not say).
        let message: String
        let action: FCMResponseAction
        init(_ status: Int, _ statusName: String?, _ errorCode: String?, field: String? = nil, message: String = "m", _ action: FCMResponseAction) {
            self.status = status; self.statusName = statusName; self.errorCode = errorCode; self.field = field; self.message = message; self.action = action
        }
        var testDescription: String { "\(status) \(statusName ?? "-") \(errorCode ?? "-") \(field ?? "") \(message == "m" ? "" : "'\(message)' ")→ \(action)" }
    }

    static let rules: [Row] = [
        Row(200, nil, nil, .delivered),
        Row(404, "NOT_FOUND", "UNREGISTERED", .removeToken),
        Row(400, "INVALID_ARGUMENT", "UNREGISTERED", .removeToken),
        Row(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", .removeTokenBehindBreaker),
        Row(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field: "message.token", .removeTokenBehindBreaker),
        Row(400, "INVALID_ARGUMENT", nil, field: "message.token", .removeTokenBehindBreaker),
        Row(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field: "message.android.ttl", .fixRequest),
        Row(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", .fixRequest),
        // Google's documented answer for a bad token names no field, only says so.
        Row(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message: FCMResponseAction.invalidTokenMessage, .removeTokenBehindBreaker),
        Row(400, "INVALID_ARGUMENT", nil, message: FCMResponseAction.invalidTokenMessage + ".", .removeTokenBehindBreaker),
        Row(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", field: "message.android.ttl", message: FCMResponseAction.invalidTokenMessage, .fixRequest),
        Row(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", .pauseProject),
        Row(429, "RESOURCE_EXHAUSTED", nil, .pauseProject),
        Row(503, "UNAVAILABLE", "UNAVAILABLE", .retry),
        Row(500, "INTERNAL", "INTERNAL", .retry),
        Row(502, nil, nil, .retry),
        Row(401, "UNAUTHENTICATED", nil, .refreshAccessToken),
        Row(401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", .halt),
        Row(403, "PERMISSION_DENIED", nil, .halt),
        Row(401, nil, nil, .refreshAccessToken),
        Row(403, nil, nil, .halt),
        Row(404, "NOT_FOUND", nil, .halt),
        Row(429, nil, nil, .pauseProject),
        Row(413, nil, nil, .fixRequest),
    ]

    @Test("each answer has its one action", arguments: rules)
    func eachAnswerHasItsAction(_ row: Row) {
        let violations = row.field.map { [FCMFieldViolation(field: $0, description: "d")] } ?? []
        let body = FCMErrorBody(code: row.status, message: row.message, status: row.statusName, errorCode: row.errorCode, fieldViolations: violations)
        let response = FCMResponse(status: row.status, retryAfter: nil, body: row.status == 200 ? Array(#"{"name":"projects/p/messages/0:1"}"#.utf8) : body.json)
        #expect(response.action == row.action)
        #expect(FCMResponseAction(status: row.status, errorCode: row.errorCode, statusName: row.statusName, fieldViolations: violations,
                                  message: row.message) == row.action)
    }

    @Test func everyActionIsReachedByTheTable() {
        #expect(Set(Self.rules.map(\.action)) == Set(FCMResponseAction.allCases))
    }

    @Test func aGoogleErrorBodyIsReadWholeAndNamesTheFailedField() {
        let text = #"{"error":{"code":400,"message":"Invalid value at 'message.android.ttl'","status":"INVALID_ARGUMENT","details":["#
            + #"{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},"#
            + #"{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.android.ttl","description":"Invalid value"}]},"#
            + #"{"@type":"type.googleapis.com/google.rpc.Unknown","x":1}]}}"#
        let response = FCMResponse(status: 400, retryAfter: nil, body: Array(text.utf8))
        #expect(response.error == FCMErrorBody(code: 400, message: "Invalid value at 'message.android.ttl'", status: "INVALID_ARGUMENT",
                                               errorCode: "INVALID_ARGUMENT",
                                               fieldViolations: [FCMFieldViolation(field: "message.android.ttl", description: "Invalid value")]))
        #expect(response.failedField == "message.android.ttl")
        #expect(response.action == .fixRequest)
        #expect(FCMErrorBody(json: response.error.json) == response.error)
    }

    @Test func aSuccessGivesTheMessageNameAndAnUnreadableErrorFallsBackOnTheStatus() {
        let ok = FCMResponse(status: 200, retryAfter: nil, body: Array(#"{"name":"projects/p/messages/0:1700000000000000%31bd1c96"}"#.utf8))
        #expect(ok.messageName == "projects/p/messages/0:1700000000000000%31bd1c96" && ok.action == .delivered)
        let html = FCMResponse(status: 503, retryAfter: "7", body: Array("<html>".utf8))
        #expect(html.error == FCMErrorBody(code: nil, message: nil, status: nil))
        #expect(html.action == .retry && html.retryAfter == .seconds(7) && html.action.honoursRetryAfter)
    }

    @Test(arguments: [("30", Duration?.some(.seconds(30))), ("0", .zero), ("Wed, 21 Oct 2015 07:28:00 GMT", nil), ("-1", nil), ("86401", nil)])
    func retryAfterIsReadAsSeconds(header: String, expected: Duration?) {
        #expect(FCMResponse(status: 429, retryAfter: header, body: [UInt8]()).retryAfter == expected)
    }
}

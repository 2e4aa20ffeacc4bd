import FCM

/// An FCM send the simulator refuses: the HTTP status and Google's error body (FCM.md, "Errors").
/// The messages are Google's where public issues show them; where they do not (the reserved-key
/// and oneof texts) they are the simulator's own wording, in Google's style — a sender acts on
/// the status, `errorCode` and field, never on the text.
struct FCMRefusal: Error, Equatable {
    let status: Int
    let body: FCMErrorBody
    /// `Retry-After` in seconds (429 always; 503 with `retryAfterSeconds`).
    var retryAfter: Int?

    /// What the counters file it under: the FcmError code, else the status name.
    var counterName: String { body.errorCode ?? body.status ?? String(status) }

    /// 400 INVALID_ARGUMENT with a BadRequest detail naming `field`.
    static func invalidArgument(_ field: String, _ description: String) -> FCMRefusal {
        FCMRefusal(status: 400, body: FCMErrorBody(code: 400, message: description, status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
                                                   fieldViolations: [FCMFieldViolation(field: field, description: description)]))
    }

    /// 400 INVALID_ARGUMENT without a field: JSON that does not parse.
    static func invalidJSON(_ detail: String) -> FCMRefusal {
        FCMRefusal(status: 400, body: FCMErrorBody(code: 400, message: "Invalid JSON payload received. \(detail)", status: "INVALID_ARGUMENT"))
    }

    /// A token that is not one, as Google's error-codes page shows it: no `fieldViolations`, only
    /// the message (a sender that waits for `message.token` to be named never prunes it).
    static let invalidToken = FCMRefusal(status: 400, body: FCMErrorBody(code: 400, message: FCMResponseAction.invalidTokenMessage,
                                                                          status: "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT"))

    static let unregistered = FCMRefusal(status: 404, body: FCMErrorBody(code: 404, message: "Requested entity was not found.",
                                                                          status: "NOT_FOUND", errorCode: "UNREGISTERED"))

    static let senderIDMismatch = FCMRefusal(status: 403, body: FCMErrorBody(code: 403, message: "SenderId mismatch",
                                                                              status: "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH"))

    /// A missing, unknown or expired access token: Google sends no FcmError detail with it.
    static let unauthenticated = FCMRefusal(status: 401, body: FCMErrorBody(
        code: 401, message: "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid "
            + "authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
        status: "UNAUTHENTICATED"))

    /// Another project than the access token's: the account has no permission there.
    static func permissionDenied(project: String) -> FCMRefusal {
        FCMRefusal(status: 403, body: FCMErrorBody(
            code: 403, message: "Permission 'cloudmessaging.messages.create' denied on resource "
                + "'//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist).", status: "PERMISSION_DENIED"))
    }

    static func quotaExceeded(retryAfter seconds: Int) -> FCMRefusal {
        FCMRefusal(status: 429, body: FCMErrorBody(code: 429, message: "Quota exceeded for quota metric 'Messages' of service "
                                                   + "'fcm.googleapis.com'.", status: "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED"),
                   retryAfter: seconds)
    }

    static let notFound = FCMRefusal(status: 404, body: FCMErrorBody(code: 404, message: "Method not found.", status: "NOT_FOUND"))

    /// The answers `fcmFaults` may inject, by the name given (`UNAVAILABLE=0.01`).
    static func injected(_ name: String) -> FCMRefusal? {
        switch name {
        case "UNAVAILABLE": FCMRefusal(status: 503, body: FCMErrorBody(code: 503, message: "The service is currently unavailable.",
                                                                       status: "UNAVAILABLE", errorCode: "UNAVAILABLE"))
        case "INTERNAL": FCMRefusal(status: 500, body: FCMErrorBody(code: 500, message: "Internal error encountered.",
                                                                    status: "INTERNAL", errorCode: "INTERNAL"))
        case "QUOTA_EXCEEDED": quotaExceeded(retryAfter: 1)
        case "UNREGISTERED": unregistered
        case "SENDER_ID_MISMATCH": senderIDMismatch
        case "UNAUTHENTICATED": unauthenticated
        case "THIRD_PARTY_AUTH_ERROR": FCMRefusal(status: 401, body: FCMErrorBody(code: 401, message: "Auth error from APNS or Web Push Service",
                                                                                  status: "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR"))
        default: nil
        }
    }

    static let injectableNames = ["UNAVAILABLE", "INTERNAL", "QUOTA_EXCEEDED", "UNREGISTERED", "SENDER_ID_MISMATCH", "UNAUTHENTICATED",
                                  "THIRD_PARTY_AUTH_ERROR"]
}

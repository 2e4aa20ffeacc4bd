import JSONCore

/// One `google.rpc.BadRequest` field violation: the field FCM refused and why.
public struct FCMFieldViolation: Sendable, Equatable {
    /// The field's path in the request, e.g. `message.token`, `message.android.ttl`.
    public let field: String
    public let description: String

    public init(field: String, description: String) {
        self.field = field
        self.description = description
    }
}

/// FCM's error body (FCM.md, "Errors"):
///
///     {"error":{"code":400,"message":"…","status":"INVALID_ARGUMENT","details":[
///       {"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},
///       {"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"…"}]}]}}
///
/// Read leniently, like APNs' `ErrorBody`: an error answer is acted on by its status even when the
/// body is missing, HTML from a proxy, or has details of types this code does not know.
public struct FCMErrorBody: Sendable, Equatable {
    public static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    public static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

    /// The HTTP status repeated in the body.
    public let code: Int?
    public let message: String?
    /// The `google.rpc.Code` name: `INVALID_ARGUMENT`, `UNAUTHENTICATED`, `PERMISSION_DENIED`, …
    public let status: String?
    /// The FcmError detail's `errorCode`: `UNREGISTERED`, `SENDER_ID_MISMATCH`, `QUOTA_EXCEEDED`, …
    public let errorCode: String?
    public let fieldViolations: [FCMFieldViolation]

    public init(code: Int?, message: String?, status: String?, errorCode: String? = nil, fieldViolations: [FCMFieldViolation] = []) {
        self.code = code
        self.message = message
        self.status = status
        self.errorCode = errorCode
        self.fieldViolations = fieldViolations
    }

    /// Parses an error body; anything that is not one gives an empty value.
    public init<Bytes: Collection>(json bytes: Bytes) where Bytes.Element == UInt8 {
        guard let error = (try? JSONParser.parse(bytes))?["error"], error.isObject else {
            self.init(code: nil, message: nil, status: nil)
            return
        }
        var errorCode: String?
        var violations: [FCMFieldViolation] = []
        for detail in error["details"]?.arrayValue ?? [] {
            switch detail["@type"]?.stringValue {
            case Self.fcmErrorType?:
                errorCode = errorCode ?? detail["errorCode"]?.stringValue
            case Self.badRequestType?:
                for violation in detail["fieldViolations"]?.arrayValue ?? [] {
                    guard let field = violation["field"]?.stringValue else { continue }
                    violations.append(FCMFieldViolation(field: field, description: violation["description"]?.stringValue ?? ""))
                }
            default:
                continue
            }
        }
        self.init(code: error["code"]?.int64Value.map { Int($0) }, message: error["message"]?.stringValue,
                  status: error["status"]?.stringValue, errorCode: errorCode, fieldViolations: violations)
    }

    /// The body as Google writes it (the simulator's answers): details only for what is set.
    public var json: [UInt8] {
        var writer = JSONWriter()
        writer.beginObject(); writer.key("error"); writer.beginObject()
        if let code { writer.key("code"); writer.int(code) }
        if let message { writer.key("message"); writer.string(message) }
        if let status { writer.key("status"); writer.string(status) }
        if errorCode != nil || !fieldViolations.isEmpty {
            writer.key("details"); writer.beginArray()
            if let errorCode {
                writer.beginObject()
                writer.key("@type"); writer.string(Self.fcmErrorType)
                writer.key("errorCode"); writer.string(errorCode)
                writer.endObject()
            }
            if !fieldViolations.isEmpty {
                writer.beginObject()
                writer.key("@type"); writer.string(Self.badRequestType)
                writer.key("fieldViolations"); writer.beginArray()
                for violation in fieldViolations {
                    writer.beginObject()
                    writer.key("field"); writer.string(violation.field)
                    writer.key("description"); writer.string(violation.description)
                    writer.endObject()
                }
                writer.endArray(); writer.endObject()
            }
            writer.endArray()
        }
        writer.endObject(); writer.endObject()
        return writer.bytes
    }
}

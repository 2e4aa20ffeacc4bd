import FCM
@testable import Simulator
import Testing

/// The simulator checks a group's bodies once: what it answers must be what a whole check of each
/// body answers.
@Suite struct FCMBodyShapeTests {
    static func body(_ token: String, rest: String = #"","data":{"kind":"start"},"android":{"priority":"HIGH"}}}"#) -> [UInt8] {
        Array((#"{"message":{"token":""# + token + rest).utf8)
    }

    static func verdict(_ check: () throws(FCMRefusal) -> FCMMessageRules.Send) -> String {
        do throws(FCMRefusal) { return "ok \(try check().token ?? "-")" } catch { return "\(error)" }
    }

    @Test func everyBodyGetsTheVerdictACheckOfItAloneGives() {
        var shape = FCMBodyShape()
        let bodies: [[UInt8]] = [
            Self.body("a1:APA91b"), Self.body("a2:APA91b"),       // same rest: the second from the shape
            Self.body("bad token!"), Self.body(#"a3\u003a"#),      // not plain token text: checked whole
            Self.body("a4:APA91b", rest: #"","data":{"from":"x"}}}"#),  // another rest: checked whole (reserved key)
            Self.body("a5:APA91b"),                                // the first rest again
            Self.body("a6:APA91b", rest: #"","data":{"kind":"start"},"android":{"priority":"HIGH"}},"validate_only":true}"#),
            Self.body("a7:APA91b", rest: #"","data":{"kind":"start"},"android":{"priority":"HIGH"}},"validate_only":true}"#),
            Self.body(String(repeating: "x", count: 4096)),        // too big whatever the rest
        ]
        for body in bodies {
            let fast = Self.verdict { () throws(FCMRefusal) in try shape.check(body) }
            let whole = Self.verdict { () throws(FCMRefusal) in try FCMMessageRules.check(body) }
            #expect(fast == whole, "\(String(decoding: body.prefix(60), as: UTF8.self))")
        }
    }
}

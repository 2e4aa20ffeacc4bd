import Testing
@testable import APNs

/// Priority rules (APNS.md §2, §3, §8): a missing priority is 10 to APNs.
@Suite struct PriorityTests {
    @Test(arguments: [
        (PushType.background, Priority?.some(.normal), true),
        (.background, .some(.immediate), false),
        (.background, .some(.low), false),
        (.background, nil, false),  // APNs reads a missing priority as 10
        (.liveactivity, .some(.normal), true),
        (.liveactivity, .some(.immediate), true),
        (.liveactivity, nil, true),
        (.liveactivity, .some(.low), false),
        (.alert, .some(.low), true),
        (.alert, .some(.normal), true),
        (.alert, .some(.immediate), true),
        (.voip, .some(.immediate), true),
    ])
    func rule(pushType: PushType, priority: Priority?, allowed: Bool) {
        do {
            try Priority.check(priority, for: pushType)
            #expect(allowed, "\(pushType) with \(String(describing: priority)) must be refused")
        } catch {
            #expect(!allowed, "\(pushType) with \(String(describing: priority)) must be allowed: \(error)")
            #expect(error.field == "apns-priority")
            #expect(error.reason == .badPriority)
            #expect(error.message.contains(pushType == .background ? "set apns-priority to 5" : "use 5 or 10"))
        }
    }

    @Test func backgroundAtTenIsRefusedWhenBuildingANotification() {
        #expect(throws: ValidationError.self) {
            try Notification(pushType: .background, topic: "com.example.quake", priority: .immediate, payload: Array(#"{"aps":{"content-available":1}}"#.utf8))
        }
    }

    @Test(arguments: [("1", Priority.low), ("5", .normal), ("10", .immediate)])
    func headerValuesRoundTrip(text: String, priority: Priority) throws {
        #expect(priority.headerValue == text)
        #expect(try Priority(headerValue: text) == priority)
    }

    @Test(arguments: ["0", "7", "high", "", "010"])
    func otherHeaderValuesAreRefused(text: String) {
        #expect(throws: ValidationError.self) { try Priority(headerValue: text) }
    }
}

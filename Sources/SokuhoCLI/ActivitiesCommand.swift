import APNs
import Crypto
import JSONCore
import TokenStore
import Vocabulary

/// `sokuho activities …`: the Live Activities running on phones below iOS 18, known by the update
/// token each one reported for an event. Updates and ends of that event go to these tokens (phones
/// on iOS 18 get them through broadcast channels instead).
enum ActivitiesCommand {
    static let spec = CommandSpec(
        "activities",
        summary: "register and list the update tokens of running Live Activities",
        subcommands: [registerSpec, listSpec])

    static let registerSpec = CommandSpec(
        "register",
        summary: "store an activity's update token for an event key (replaces the activity's earlier token)",
        options: [
            StoreAccess.option,
            OptionSpec("--app", value: "BUNDLE_ID", help: "the app's bundle ID (required)"),
            OptionSpec("--environment", value: "sandbox|production", help: "the token's APNs environment (default sandbox)"),
            OptionSpec("--event-key", value: "KEY", help: "the event the activity shows, e.g. eew-20260823020000 (required)"),
            OptionSpec("--topic", value: "TOPIC", help: "the event group (topic) the activity shows, e.g. region:301: updates carry that group's content (default: the event's first group)"),
            OptionSpec("--activity-id", value: "ID", help: "the activity's id on the phone (required)"),
            OptionSpec("--token", value: "HEX", help: "the activity's update token (pushTokenUpdates), hexadecimal (required)"),
            OptionSpec("--json", help: "print {\"activityId\":…,\"eventKey\":…,\"startedAt\":…,\"expiresAt\":…}"),
        ],
        details: """
        An activity lives at most 8 hours (iOS ends it then), so its record expires 8 hours after it
        is registered and 'sokuho tokens prune --expired' removes it. Registering the same
        --activity-id again replaces its token and event.
        """,
        run: register)

    static let listSpec = CommandSpec(
        "list",
        summary: "list the activities registered for an event key",
        options: [
            StoreAccess.option,
            OptionSpec("--event-key", value: "KEY", help: "the event (required)"),
            OptionSpec("--json", help: "print one JSON object per activity"),
        ],
        details: "Tokens are shown by their last 8 characters only.",
        run: list)

    static func register(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let app = try invocation.required("--app")
        let eventKey = try invocation.required("--event-key")
        let activityID = try invocation.required("--activity-id")
        let tokenText = try invocation.required("--token")
        let environment = Environment(rawValue: try invocation.choice("--environment", ["sandbox", "production"]) ?? "sandbox")!
        let token: DeviceToken
        do { token = try DeviceToken(hex: tokenText) } catch { throw CLIError.data("--token: \(error.description)") }
        let bytes = token.withBytes { Array($0) }
        let now = WallClock.milliseconds()
        let activity = ActivityRecord(id: activityID, app: app, environment: environment, updateToken: bytes, eventKey: eventKey, startedAt: now,
                                      topic: invocation.string("--topic"))
        let store = try StoreAccess.open(invocation, readOnly: false, create: true)
        defer { store.close() }
        _ = try StoreAccess.run { () throws(StoreError) in try store.write([.putActivity(activity)]) }
        if invocation.flag("--json") {
            invocation.console.print(json(activity, fields: [("eventKey", activity.eventKey)]))
        } else {
            invocation.console.print("registered activity \(activity.id) for \(eventKey) (token \(token.redacted), expires in 8 h)")
        }
        return .success
    }

    static func list(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let eventKey = try invocation.required("--event-key")
        let store = try StoreAccess.open(invocation, readOnly: true)
        defer { store.close() }
        let activities = try StoreAccess.run { () throws(StoreError) in try store.activities(eventKey: eventKey) }
        for activity in activities {
            let redacted = "…" + Hex.encode(activity.updateToken).suffix(8)
            if invocation.flag("--json") {
                invocation.console.print(json(activity, fields: [("app", activity.app), ("environment", activity.environment.name),
                                                                 ("token", redacted)]))
            } else {
                invocation.console.print("\(activity.id)  \(activity.app) \(activity.environment.name)  token \(redacted)  expires \(activity.expiresAt) ms")
            }
        }
        return .success
    }

    /// One activity as a JSON object: its id, the string `fields` given, and its times.
    private static func json(_ activity: ActivityRecord, fields: [(String, String)]) -> String {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("activityId"); writer.string(activity.id)
        for (key, value) in fields { writer.key(key); writer.string(value) }
        writer.key("startedAt"); writer.int(Int(activity.startedAt))
        writer.key("expiresAt"); writer.int(Int(activity.expiresAt))
        writer.endObject()
        return writer.string
    }
}

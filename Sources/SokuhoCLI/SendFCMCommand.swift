import APNs
import FCM
import JSONCore
import Sender
import Vocabulary

/// `sokuho send --provider fcm`: one FCM HTTP v1 message to a registration token, through the same
/// one-connection pool and rules as an APNs `send` (FCM's answers judged by `FCMResponseAction`).
/// Everything is validated before the access token is asked for, and the access token before a
/// connection to FCM opens.
enum SendFCMCommand {
    /// FCM's own options; each is refused with `--provider apns`.
    static let options: [OptionSpec] = [
        OptionSpec("--service-account", value: "FILE", help: "fcm: the service account's JSON key file as Google's console downloads it"),
        OptionSpec("--fcm-host", value: "HOST:PORT", help: "fcm: send host instead of Google's fcm.googleapis.com:443 (e.g. the simulator's push port)"),
        OptionSpec("--data", value: "KEY=VALUE", help: "fcm: a data field of the message (not with --event)", repeatable: true),
        OptionSpec("--event-key", value: "KEY", help: "fcm --event: the event's key (data eventKey: one Live Update per key on the phone)"),
        OptionSpec("--serial", value: "N", help: "fcm --event: the event's revision (data serial, default 1)"),
        OptionSpec("--group", value: "NAME", help: "fcm --event: the group the phone was targeted through (data group, e.g. region:301)"),
        OptionSpec("--android-priority", value: "P", help: "fcm: android.priority, high (default) or normal"),
        OptionSpec("--ttl", value: "SECONDS", help: "fcm: android.ttl, how long FCM keeps it for an offline phone (0 to 2419200)"),
        OptionSpec("--collapse-key", value: "KEY", help: "fcm: android.collapse_key"),
    ]

    /// `send` options that mean APNs only: given with `--provider fcm`, they would be ignored.
    static let apnsOnly = ["--channel", "--payload", "--push-type", "--priority", "--expiration", "--collapse-id", "--apns-id",
                           "--attributes-type", "--attributes", "--sound", "--stale-date", "--dismissal-date", "--relevance-score",
                           "--input-push-channel", "--input-push-token", "--timestamp", "--team-id", "--key-id", "--key", "--topic",
                           "--environment", "--host", "--manage-host"]
    /// What `--event` reads that `--data` replaces.
    static let eventOnly = ["--event-key", "--serial", "--group", "--content-state", "--alert-title", "--alert-body"]

    /// `--provider`: apns (the default) or fcm.
    static func isFCM(_ invocation: Invocation) throws(CLIError) -> Bool {
        try invocation.choice("--provider", ["apns", "fcm"]) == "fcm"
    }

    /// With `--provider apns`, an FCM option is a mistake (the message would go elsewhere than meant).
    static func refuseOptions(for invocation: Invocation) throws(CLIError) {
        if let given = options.map(\.name).first(where: { invocation.values[$0] != nil }) {
            throw .usage("\(given) is for --provider fcm; an APNs send does not read it")
        }
    }

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        if let given = apnsOnly.first(where: { invocation.values[$0] != nil }) {
            throw .usage("\(given) is an APNs option; with --provider fcm give --token, --service-account, --fcm-host and --data or --event")
        }
        let text = try invocation.required("--token")
        guard DeviceToken.isFCMRegistrationToken(text), let token = DeviceToken(bytes: Array(text.utf8)) else {
            throw .data("--token: not an FCM registration token (1 to 255 of A-Z a-z 0-9 _ : -)")
        }
        let template = try template(invocation)
        let account = try FCMConnection.serviceAccount(invocation)
        var stage = ""
        let answer: ConnectionPool.Answer
        do { answer = try FCMConnection.perform(body: template.body(token: token), account: account, invocation) { stage = $0 } } catch {
            // `--json` promises JSON on stdout whatever happened once a message was to be sent:
            // a refused service account or no answer from FCM is said there too (and on stderr).
            if invocation.flag("--json") {
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("status"); writer.int(0)
                writer.key("name"); writer.null()
                writer.key("errorCode"); writer.null()
                writer.key("reason"); writer.string(error.message)
                writer.key("failedAt"); writer.string(stage)
                writer.endObject()
                invocation.console.print(writer.string)
            }
            throw error
        }
        report(answer, invocation: invocation)
        return answer.succeeded ? .success : .refused
    }

    /// The message's body around the token: `--data` fields, or a Live Update from `--event`.
    static func template(_ invocation: Invocation) throws(CLIError) -> FCMMessageTemplate {
        let data = invocation.strings("--data"), event = invocation.string("--event")
        guard data.isEmpty != (event == nil) else {
            throw .usage("give --data KEY=VALUE (repeatable) or --event start|update|end, one of the two; see 'sokuho send --help'")
        }
        var fields: [(key: String, value: String)] = []
        if let event {
            guard let kind = LiveUpdateKind(rawValue: event) else { throw .data("--event must be start, update or end, not '\(event)'") }
            let contentState: [UInt8]
            if let path = invocation.string("--content-state") {
                contentState = try InputFile.read(path, option: "--content-state")
            } else {
                guard kind == .end else { throw .usage("--event \(event) with --provider fcm needs --content-state FILE") }
                contentState = Array("{}".utf8)
            }
            let eventKey = try invocation.required("--event-key")
            let serial = try invocation.int("--serial", in: 1...Int(Int32.max)) ?? 1
            do {
                fields = try LiveUpdateData(eventKey: eventKey, serial: serial, kind: kind, group: invocation.string("--group") ?? "",
                                            contentState: contentState, alertTitle: invocation.string("--alert-title"),
                                            alertBody: invocation.string("--alert-body")).fields
            } catch {
                throw .data("\(error)")
            }
        } else {
            if let given = eventOnly.first(where: { invocation.values[$0] != nil }) {
                throw .usage("\(given) builds a Live Update with --event; with --data, give each field as --data KEY=VALUE instead")
            }
            for item in data {
                guard let equals = item.firstIndex(of: "="), equals != item.startIndex else {
                    throw .data("--data must be KEY=VALUE, not '\(item)'")
                }
                fields.append((String(item[..<equals]), String(item[item.index(after: equals)...])))
            }
        }
        let priority: FCMPriority = try invocation.choice("--android-priority", ["high", "normal"]) == "normal" ? .normal : .high
        let ttl = try invocation.int("--ttl", in: 0...2_419_200).map { Duration.seconds($0) }
        let android = FCMAndroidOptions(priority: priority, ttl: ttl, collapseKey: invocation.string("--collapse-key"))
        do { return try FCMMessageTemplate(data: fields, android: android) } catch { throw .data("\(error)") }
    }

    static func report(_ answer: ConnectionPool.Answer, invocation: Invocation) {
        let name = answer.succeeded ? FCMResponse(status: answer.status, retryAfter: nil, body: answer.body).messageName : nil
        let refusal = answer.fcm
        if invocation.flag("--json") {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("status"); writer.int(answer.status)
            writer.key("name"); if let name { writer.string(name) } else { writer.null() }
            writer.key("errorCode"); if let code = refusal?.errorCode { writer.string(code) } else { writer.null() }
            writer.key("reason"); if let message = refusal?.message { writer.string(message) } else { writer.null() }
            if let field = refusal?.field { writer.key("field"); writer.string(field) }
            writer.endObject()
            invocation.console.print(writer.string)
            return
        }
        var line = "status \(answer.status)  name \(name ?? "-")  errorCode \(refusal?.errorCode ?? "-")"
        if let field = refusal?.field { line += "  field \(field)" }
        invocation.console.print(line)
        if !answer.succeeded {
            let what = refusal.map { "\($0.errorCode ?? "HTTP \(answer.status)")\($0.field.map { " (\($0))" } ?? ""): \($0.message ?? "")" } ?? "HTTP \(answer.status)"
            invocation.console.error("sokuho send: FCM refused the message: \(what)")
        }
    }
}

#if canImport(Glibc)
import Glibc
#endif
import APNs
import Crypto
import JSONCore
import Sender
import Vocabulary

/// `sokuho send`: one push to a device token or a broadcast channel, with Live Activity shortcuts
/// so nobody hand-writes `aps`. Everything is validated before a connection is opened.
enum SendCommand {
    static let spec = CommandSpec(
        "send",
        summary: "send one push to a device token or a broadcast channel (APNs), or one FCM message (--provider fcm)",
        usage: "(--token HEX | --channel ID) (--payload FILE|- | --event start|update|end …) [options]  |  --provider fcm --token FCM_TOKEN --service-account FILE (--data KEY=VALUE… | --event start|update|end …) [options]",
        options: [OptionSpec("--provider", value: "P", help: "apns (default) or fcm (Android through Firebase Cloud Messaging HTTP v1)")]
            + APNsConnectionOptions.all + [
            OptionSpec("--token", value: "HEX", help: "device token (push-to-start token for --event start, the activity's update token otherwise)"),
            OptionSpec("--channel", value: "ID", help: "broadcast channel ID (update and end only)"),
            OptionSpec("--payload", value: "FILE|-", help: "the JSON body, from a file or standard input"),
            OptionSpec("--push-type", value: "T", help: "alert, background, liveactivity, voip, … (default: liveactivity with --event or --channel, else alert)"),
            OptionSpec("--priority", value: "P", help: "10, 5 or 1 (default: 10 for start/end and alerting updates, 5 for quiet updates)"),
            OptionSpec("--expiration", value: "E", help: "epoch seconds until which APNs may store it; 0: one attempt (broadcast default 0)"),
            OptionSpec("--collapse-id", value: "C", help: "apns-collapse-id (at most 64 bytes)"),
            OptionSpec("--apns-id", value: "UUID", help: "apns-id (lowercase UUID; default: a new one)"),
            OptionSpec("--event", value: "E", help: "build a Live Activity payload: start, update or end"),
            OptionSpec("--attributes-type", value: "T", help: "start: the ActivityAttributes type name"),
            OptionSpec("--attributes", value: "FILE", help: "start: the static attributes (a JSON object, embedded as is)"),
            OptionSpec("--content-state", value: "FILE", help: "the ContentState (a JSON object, embedded as is)"),
            OptionSpec("--alert-title", value: "TEXT", help: "alert title (required for start)"),
            OptionSpec("--alert-body", value: "TEXT", help: "alert body (required for start)"),
            OptionSpec("--sound", value: "NAME", help: "alert sound, e.g. default"),
            OptionSpec("--stale-date", value: "EPOCH", help: "start/update: when the content goes stale"),
            OptionSpec("--dismissal-date", value: "EPOCH", help: "end: when the ended activity leaves the Lock Screen"),
            OptionSpec("--relevance-score", value: "N", help: "start/update: ordering among activities"),
            OptionSpec("--input-push-channel", value: "ID", help: "start: subscribe the new activity to this broadcast channel (iOS 18+; not with --input-push-token)"),
            OptionSpec("--input-push-token", help: "start: ask for an update token (iOS 18+; not with --input-push-channel)"),
            OptionSpec("--timestamp", value: "EPOCH", help: "aps.timestamp (default: now)"),
            OptionSpec("--timeout", value: "SECONDS", help: "give up after this long (default 30)"),
            OptionSpec("--json", help: "print {\"status\":200,\"apnsId\":…,\"apnsUniqueId\":…,\"reason\":null}; fcm: {\"status\":200,\"name\":…,\"errorCode\":null,\"reason\":null}, with \"status\":0 and \"failedAt\" (accessToken, connection) when FCM never answered"),
        ] + SendFCMCommand.options,
        details: """
        exit codes: 0 APNs answered 200 · 1 APNs refused (the reason is printed) · 64 usage ·
                    65 invalid payload or option value (nothing was sent) · 66 a file is missing ·
                    69 the server could not be reached or TLS failed
        --provider fcm: --token is an FCM registration token; the access token comes from the service
        account (its token_uri; --ca-file also verifies that host); --event builds a Live Update's data
        (eventKey, serial, kind, group, contentState, alertTitle, alertBody) from --event-key, --serial,
        --group, --content-state, --alert-title, --alert-body. APNs-only options are refused (64).
        Exit 1 also when the token endpoint refuses the account (invalid_grant, with Google's words).
        """,
        run: run)

    /// The options that build the payload for --event; with --payload they would be silently ignored.
    static let liveActivityOptions = ["--attributes-type", "--attributes", "--content-state", "--alert-title", "--alert-body", "--sound",
                                      "--stale-date", "--dismissal-date", "--relevance-score", "--input-push-channel",
                                      "--input-push-token", "--timestamp"]

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        if try SendFCMCommand.isFCM(invocation) { return try SendFCMCommand.run(invocation) }
        try SendFCMCommand.refuseOptions(for: invocation)
        let push = try prepare(invocation)
        let answered = try APNsConnectionOptions.perform(push, to: try APNsConnectionOptions.pushEndpoint(invocation), invocation)
        report(answered.answer.response, invocation: invocation, tokenIssuedAt: answered.tokenIssuedAt)
        return answered.answer.succeeded ? .success : .refused
    }

    static func report(_ response: Response, invocation: Invocation, tokenIssuedAt: Int64? = nil) {
        if invocation.flag("--json") {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("status"); writer.int(response.status)
            // A broadcast is identified by its apns-request-id: it fills the same field.
            writer.key("apnsId"); if let id = response.apnsID ?? response.requestID { writer.string(id) } else { writer.null() }
            writer.key("apnsUniqueId"); if let id = response.uniqueID { writer.string(id) } else { writer.null() }
            writer.key("reason"); if let reason = response.reason { writer.string(reason.name) } else { writer.null() }
            if let timestamp = response.timestamp { writer.key("timestamp"); writer.int(timestamp) }
            writer.endObject()
            invocation.console.print(writer.string)
        } else {
            var line = "status \(response.status)"
            if response.apnsID == nil, let requestID = response.requestID {
                line += "  apns-request-id \(requestID)"
            } else {
                line += "  apns-id \(response.apnsID ?? "-")"
            }
            line += "  apns-unique-id \(response.uniqueID ?? "-")"
            line += "  reason \(response.reason?.name ?? "-")"
            if let timestamp = response.timestamp { line += "  timestamp \(timestamp)" }
            invocation.console.print(line)
            if !(200..<300).contains(response.status) {
                invocation.console.error("sokuho send: APNs refused the push: \(RefusalMessage.text(response, tokenIssuedAt: tokenIssuedAt))")
            }
        }
    }

    /// Validates every input and builds the request; nothing touches the network here.
    static func prepare(_ invocation: Invocation) throws(CLIError) -> ConnectionPool.Request {
        let token = invocation.string("--token"), channel = invocation.string("--channel")
        guard (token == nil) != (channel == nil) else {
            throw .usage("give exactly one of --token HEX or --channel ID; see 'sokuho send --help'")
        }
        let hasPayload = invocation.string("--payload") != nil, event = invocation.string("--event")
        guard hasPayload != (event != nil) else {
            throw .usage("give exactly one of --payload FILE|- or --event start|update|end; see 'sokuho send --help'")
        }
        if hasPayload, let shortcut = liveActivityOptions.first(where: { invocation.values[$0] != nil }) {
            throw .usage("\(shortcut) builds a Live Activity payload with --event; with --payload, put it in the JSON instead")
        }
        let bundle = try APNsConnectionOptions.bundle(invocation)
        let pushType: PushType
        if let text = invocation.string("--push-type") {
            pushType = try option("--push-type") { () throws(ValidationError) in try PushType(headerValue: text) }
        } else {
            pushType = (event != nil || channel != nil) ? .liveactivity : .alert
        }
        let destination: PayloadDestination = channel != nil ? .broadcast : .device(pushType)
        let body: [UInt8]
        var alerting = false
        if let path = invocation.string("--payload") {
            body = try InputFile.read(path, option: "--payload")
            do { _ = try PayloadValidator.validate(body, for: destination) } catch { throw .data("--payload: \(error)") }
            alerting = (try? JSONParser.parse(body))?["aps"]?["alert"] != nil
        } else {
            let payload = try liveActivityPayload(invocation, event: event!)
            alerting = payload.alert != nil
            do { body = try payload.render(for: destination) } catch { throw .data("\(error)") }
        }
        let priority = try priority(invocation, pushType: pushType, event: event, alerting: alerting)
        let expiration: Expiration? = try invocation.string("--expiration").map { (text: String) throws(CLIError) in
            return try option("--expiration") { () throws(ValidationError) in try Expiration(headerValue: text) }
        }
        let apnsID: APNsID = try invocation.string("--apns-id").map { (text: String) throws(CLIError) in
            return try option("--apns-id") { () throws(ValidationError) in try APNsID(text) }
        } ?? APNsID.random()

        if let channel {
            // A flag that restates what --channel implies (curl-style `--push-type liveactivity`) is
            // accepted; only one that contradicts it is an error, so nothing is silently dropped.
            if let text = invocation.string("--push-type"), pushType != .liveactivity {
                throw .usage("--push-type \(text) contradicts --channel: a broadcast is always liveactivity (leave --push-type out or give liveactivity)")
            }
            if invocation.string("--collapse-id") != nil {
                throw .usage("--collapse-id does not apply to a broadcast (--channel): broadcasts cannot collapse")
            }
            let channelID: ChannelID
            channelID = try option("--channel") { () throws(ValidationError) in try ChannelID(channel) }
            let policy: MessageStoragePolicy = (expiration.map { !$0.isImmediate } ?? false) ? .mostRecentMessageStored : .noMessageStored
            do {
                let request = try BroadcastRequest(bundle: bundle, channelID: channelID, storagePolicy: policy, priority: priority ?? .immediate,
                                                   expiration: expiration, requestID: apnsID, payload: body)
                return ConnectionPool.Request(request)
            } catch {
                throw .data("\(error)")
            }
        }
        guard let hex = token else { throw .usage("--token is required") }
        let deviceToken: DeviceToken
        deviceToken = try option("--token") { () throws(ValidationError) in try DeviceToken(hex: hex) }
        let collapseID: CollapseID? = try invocation.string("--collapse-id").map { (text: String) throws(CLIError) in
            return try option("--collapse-id") { () throws(ValidationError) in try CollapseID(text) }
        }
        do {
            let notification = try Notification(pushType: pushType, bundle: bundle, priority: priority, expiration: expiration,
                                                 collapseID: collapseID, apnsID: apnsID, payload: body)
            return ConnectionPool.Request(method: .post, path: deviceToken.path, headers: notification.headers, body: notification.payload)
        } catch {
            throw .data("\(error)")
        }
    }

    /// Runs a value parser, turning its error into exit 65 with the option's name.
    static func option<T>(_ name: String, _ parse: () throws(ValidationError) -> T) throws(CLIError) -> T {
        do { return try parse() } catch { throw .data("\(name): \(error.message)") }
    }

    static func priority(_ invocation: Invocation, pushType: PushType, event: String?, alerting: Bool) throws(CLIError) -> Priority? {
        if let text = invocation.string("--priority") {
            return try option("--priority") { () throws(ValidationError) in try Priority(headerValue: text) }
        }
        switch pushType {
        case .liveactivity: return (event == "update" && !alerting) ? .normal : .immediate
        case .background: return .normal
        default: return nil
        }
    }

    static func liveActivityPayload(_ invocation: Invocation, event text: String) throws(CLIError) -> LiveActivityPayload {
        guard let event = LiveActivityEvent(rawValue: text) else {
            throw .data("--event must be start, update or end, not '\(text)'")
        }
        let timestamp = Int64(try invocation.int("--timestamp", in: 0...Int(Int32.max) * 4) ?? Int(WallClock.seconds()))
        var payload = LiveActivityPayload(event: event, timestamp: timestamp)
        payload.contentState = try invocation.string("--content-state").map { (path: String) throws(CLIError) in try InputFile.read(path, option: "--content-state") }
        payload.attributesType = invocation.string("--attributes-type")
        payload.attributes = try invocation.string("--attributes").map { (path: String) throws(CLIError) in try InputFile.read(path, option: "--attributes") }
        let title = invocation.string("--alert-title"), body = invocation.string("--alert-body")
        if title != nil || body != nil || invocation.string("--sound") != nil {
            payload.alert = LiveActivityAlert(title: title ?? "", body: body ?? "", sound: invocation.string("--sound"))
        }
        payload.staleDate = try invocation.int("--stale-date", in: 0...Int(Int32.max) * 4).map(Int64.init)
        payload.dismissalDate = try invocation.int("--dismissal-date", in: 0...Int(Int32.max) * 4).map(Int64.init)
        payload.relevanceScore = try invocation.double("--relevance-score", in: -1e12...1e12)
        // ActivityKit gives an activity one push type, so the two are alternatives (a strict APNs
        // refuses both: BadRequestParams). `fanout` picks for its groups; here both were asked for
        // by name, and dropping either silently would send something else than the command says.
        if invocation.flag("--input-push-token"), invocation.string("--input-push-channel") != nil {
            throw .usage("--input-push-token and --input-push-channel are alternatives, not both: a Live Activity gets updates either by its update token or by the channel's broadcasts; give one")
        }
        payload.requestsUpdateToken = invocation.flag("--input-push-token")
        if let channel = invocation.string("--input-push-channel") {
            payload.inputPushChannel = try option("--input-push-channel") { () throws(ValidationError) in try ChannelID(channel) }
        }
        return payload
    }
}

import APNs
import JSONCore
import Sender

/// `sokuho channels create|list|read|delete`: broadcast channel management on the channel host.
enum ChannelsCommand {
    static let common = APNsConnectionOptions.all + [
        OptionSpec("--json", help: "print JSON"),
        OptionSpec("--timeout", value: "SECONDS", help: "give up after this long (default 30)"),
    ]
    static let channel = OptionSpec("--channel", value: "ID", help: "the channel ID (from 'channels create' or 'channels list')")

    static let spec = CommandSpec(
        "channels",
        summary: "create, list, read and delete broadcast channels",
        subcommands: [
            CommandSpec("create", summary: "create a channel and print its ID",
                        options: common + [OptionSpec("--storage-policy", value: "0|1", help: "0: no message stored (default), 1: most recent message stored")],
                        run: { invocation throws(CLIError) in
                            let policyValue = try invocation.int("--storage-policy", in: 0...1) ?? 0
                            let policy = MessageStoragePolicy(rawValue: policyValue) ?? .noMessageStored
                            return try perform(.create(policy), invocation)
                        }),
            CommandSpec("list", summary: "list every channel of the app", options: common,
                        run: { invocation throws(CLIError) in try perform(.listAll, invocation) }),
            CommandSpec("read", summary: "show a channel's storage policy", options: common + [channel],
                        run: { invocation throws(CLIError) in try perform(.read(try channelID(invocation)), invocation) }),
            CommandSpec("delete", summary: "delete a channel", options: common + [channel],
                        run: { invocation throws(CLIError) in try perform(.delete(try channelID(invocation)), invocation) }),
        ])

    static func channelID(_ invocation: Invocation) throws(CLIError) -> ChannelID {
        let text = try invocation.required("--channel")
        return try SendCommand.option("--channel") { () throws(ValidationError) in try ChannelID(text) }
    }

    static func perform(_ operation: ChannelManagementRequest.Operation, _ invocation: Invocation) throws(CLIError) -> ExitCode {
        let bundle = try APNsConnectionOptions.bundle(invocation)
        let request = ChannelManagementRequest(operation, bundle: bundle, requestID: APNsID.random())
        let answered = try APNsConnectionOptions.perform(ConnectionPool.Request(request), to: try APNsConnectionOptions.manageEndpoint(invocation),
                                                         invocation)
        let (status, headers, body) = (answered.answer.status, answered.answer.headers, answered.answer.body)
        let response = answered.answer.response
        // APNs answers a delete of a channel that is already gone with 404 BadPath (APNS.md §9.2):
        // the channel is gone either way, so a retried or repeated delete succeeds (exit 0).
        if case let .delete(id) = operation, !(200..<300).contains(status), ChannelManagementResponse.deleteSucceeded(response) {
            invocation.console.print(invocation.flag("--json") ? "{\"deleted\":\(JSONWriter.quoted(id.text)),\"alreadyDeleted\":true}" : "deleted \(id.text)")
            invocation.console.error("\(invocation.commandPath): \(id.text) was already deleted (\(status) BadPath)")
            return .success
        }
        guard (200..<300).contains(status) else {
            if invocation.flag("--json") {
                SendCommand.report(response, invocation: invocation, tokenIssuedAt: answered.tokenIssuedAt)
            } else {
                invocation.console.error("\(invocation.commandPath): APNs refused: \(RefusalMessage.text(response, tokenIssuedAt: answered.tokenIssuedAt))")
            }
            return .refused
        }
        let json = invocation.flag("--json")
        do throws(ValidationError) {
            switch operation {
            case .create:
                let id = try ChannelManagementResponse.createdChannelID(headers: headers)
                invocation.console.print(json ? "{\"channel\":\(JSONWriter.quoted(id.text))}" : id.text)
            case .listAll:
                let ids = try ChannelManagementResponse.channelList(body: body)
                if json {
                    var writer = JSONWriter()
                    writer.beginObject(); writer.key("channels"); writer.beginArray()
                    for id in ids { writer.string(id.text) }
                    writer.endArray(); writer.endObject()
                    invocation.console.print(writer.string)
                } else {
                    for id in ids { invocation.console.print(id.text) }
                }
            case let .read(id):
                let info = try ChannelManagementResponse.channelInfo(body: body)
                if json {
                    invocation.console.print("{\"channel\":\(JSONWriter.quoted(id.text)),\"storagePolicy\":\(info.storagePolicy.rawValue),\"pushType\":\(JSONWriter.quoted(info.pushType))}")
                } else {
                    invocation.console.print("\(id.text)  storage-policy \(info.storagePolicy.rawValue)  push-type \(info.pushType)")
                }
            case let .delete(id):
                invocation.console.print(json ? "{\"deleted\":\(JSONWriter.quoted(id.text))}" : "deleted \(id.text)")
            }
        } catch {
            throw CLIError(.unavailable, "the server's answer could not be read: \(error)")
        }
        return .success
    }
}

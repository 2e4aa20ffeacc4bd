import APNs
import Crypto
import HTTP2
import JSONCore

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
        let tokens = try APNsConnectionOptions.providerTokens(invocation)
        let (host, port) = try APNsConnectionOptions.manageEndpoint(invocation)
        let tls = try APNsConnectionOptions.tls(invocation)
        let timeout = try invocation.double("--timeout", in: 0.1...3600) ?? 30
        let request = ChannelManagementRequest(operation, bundle: bundle, requestID: APNsID.random())
        var lease: ProviderTokenLease?
        let token: ProviderToken
        do { token = try tokens.token(for: &lease) } catch { throw CLIError(.dataError, error.description) }
        let method: StaticString
        switch request.method {
        case .get: method = "GET"
        case .delete: method = "DELETE"
        default: method = "POST"
        }
        var options = ClientConnectionOptions(host: host, port: port, tls: tls)
        options.serverName = invocation.string("--server-name")
        options.connectTimeout = .seconds(timeout)
        let clientRequest = ClientRequest(method: method, path: request.path, headers: request.headers.map { ($0.name, $0.value) },
                                          body: request.body.isEmpty ? nil : request.body)
        let results: [ClientResult]
        switch OneShotClient.perform([clientRequest], options: options, authorization: token.authorization, timeout: .seconds(timeout),
                                   streamsUntilFirstSuccess: 1) {
        case let .failure(error): throw CLIError(.unavailable, "\(host):\(port): \(error)")
        case let .success(value): results = value
        }
        let status: Int, rawHeaders: [(name: String, value: String)], body: [UInt8]
        switch results[0] {
        case let .response(answerStatus, answerHeaders, answerBody): (status, rawHeaders, body) = (answerStatus, answerHeaders, answerBody)
        case let .failed(failure): throw CLIError(.unavailable, "\(host):\(port): no answer: \(failure)")
        }
        let headers = rawHeaders.map { HeaderField($0.name, $0.value) }
        let response = Response(status: status, headers: headers, body: body)
        // APNs answers a delete of a channel that is already gone with 404 BadPath (APNS.md §9.2):
        // the channel is gone either way, so a retried or repeated delete succeeds (exit 0).
        if case let .delete(id) = operation, !(200..<300).contains(status), ChannelManagementResponse.deleteSucceeded(response) {
            invocation.console.print(invocation.flag("--json") ? "{\"deleted\":\(JSONWriter.quoted(id.text)),\"alreadyDeleted\":true}" : "deleted \(id.text)")
            invocation.console.error("\(invocation.commandPath): \(id.text) was already deleted (\(status) BadPath)")
            return .success
        }
        guard (200..<300).contains(status) else {
            if invocation.flag("--json") {
                SendCommand.report(response, invocation: invocation, tokenIssuedAt: token.issuedAt)
            } else {
                invocation.console.error("\(invocation.commandPath): APNs refused: \(RefusalMessage.text(response, tokenIssuedAt: token.issuedAt))")
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

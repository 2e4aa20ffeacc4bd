import APNs
import Fanout
import HTTPAPI
import IO
import JSONCore

/// The backends' channel management (admin token), for channels an operator keeps outside any
/// one event (an election night's standing channel, created before the phones subscribe):
/// - `GET /v1/channels?app=…&environment=…`: the app's channels.
/// - `POST /v1/channels` with `{"app","environment","storagePolicy"}`: 201 with the new channel.
/// - `DELETE /v1/channels/{id}?app=…&environment=…`: a channel already gone counts as deleted.
/// Each is a request to APNs' channel host that may take seconds, so it runs on a thread of its
/// own and answers `.deferred`; at most `maximumInFlight` at once (an API client in a loop must not
/// turn into hundreds of threads).
extension Router {
    static let channelsPath = "/v1/channels"
    static let maximumChannelRequestsInFlight = 4

    /// The answer for a channel route, or nil when the path is not one. The caller checked the admin token.
    func channelAnswer(_ request: HTTPRequest, service: Service) -> HTTPAnswer? {
        let operation: @Sendable (AppRuntime) throws(FanoutError) -> HTTPResponse
        let runtime: AppRuntime
        switch request.method {
        case "GET" where request.path == Self.channelsPath:
            switch Self.queryApp(request, service: service) {
            case let .failure(refusal): return refusal.answer
            case let .success(found): runtime = found
            }
            operation = { runtime throws(FanoutError) in
                let ids = try runtime.channels.list()
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("app"); writer.string(runtime.app.bundleID.text)
                writer.key("environment"); writer.string(runtime.app.environment.rawValue)
                writer.key("channels"); writer.beginArray(); for id in ids { writer.string(id.text) }; writer.endArray()
                writer.endObject()
                return .json(writer.bytes)
            }
        case "POST" where request.path == Self.channelsPath:
            let policy: MessageStoragePolicy
            do {
                var fields = try JSONObjectFields<EventError>(json: request.body, root: "body")
                let app = try fields.required("app") { (value, field) throws(EventError) in try Self.bundle(value.stringValue, field: field) }
                let environment = try fields.required("environment") { (value, field) throws(EventError) in
                    try Self.environment(value.stringValue, field: field)
                }
                policy = try fields.optional("storagePolicy") { (value, field) throws(EventError) in
                    guard let number = value.int64Value, let policy = MessageStoragePolicy(rawValue: Int(truncatingIfNeeded: number)) else {
                        throw EventError(field: field, "must be 0 (no message stored) or 1 (most recent message stored)")
                    }
                    return policy
                } ?? .noMessageStored
                try fields.rejectUnknown()
                guard let found = service.app(app, environment) else { return Self.unknownApp(app, environment) }
                runtime = found
            } catch {
                return .response(.error(status: 400, code: "invalid_body", message: error.description))
            }
            operation = { runtime throws(FanoutError) in
                let id = try runtime.channels.create(count: 1, policy: policy)[0]
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("channel"); writer.string(id.text)
                writer.key("storagePolicy"); writer.int(policy.rawValue)
                writer.endObject()
                var response = HTTPResponse.json(status: 201, writer.bytes)
                response.headers.append(("Location", Self.channelURL(id, runtime)))
                return response
            }
        case "DELETE" where request.path.hasPrefix(Self.channelsPath + "/"):
            let id: ChannelID
            do throws(ValidationError) { id = try ChannelID(String(request.path.dropFirst(Self.channelsPath.count + 1))) } catch {
                return .response(.error(status: 404, code: "not_found", message: "channelId: \(error.message)"))
            }
            switch Self.queryApp(request, service: service) {
            case let .failure(refusal): return refusal.answer
            case let .success(found): runtime = found
            }
            operation = { runtime throws(FanoutError) in
                let alreadyDeleted = try runtime.channels.delete(id)
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("channel"); writer.string(id.text)
                writer.key("deleted"); writer.bool(true)
                writer.key("alreadyDeleted"); writer.bool(alreadyDeleted)
                writer.endObject()
                return .json(writer.bytes)
            }
        default:
            guard request.path == Self.channelsPath || request.path.hasPrefix(Self.channelsPath + "/") else { return nil }
            return .response(.error(status: 404, code: "not_found", message: "no such route: \(request.method) \(request.path)"))
        }
        return Self.perform(operation, runtime: runtime, service: service)
    }

    /// Runs `operation` on its own thread and answers from there.
    private static func perform(_ operation: @escaping @Sendable (AppRuntime) throws(FanoutError) -> HTTPResponse, runtime: AppRuntime,
                                service: Service) -> HTTPAnswer {
        guard service.channelRequests.add(1, ordering: .relaxed).newValue <= maximumChannelRequestsInFlight else {
            service.channelRequests.subtract(1, ordering: .relaxed)
            var response = HTTPResponse.error(status: 429, code: "too_many_channel_requests",
                                              message: "\(maximumChannelRequestsInFlight) channel requests are already waiting for APNs; retry after the Retry-After seconds")
            response.headers.append(("Retry-After", "1"))
            return .response(response)
        }
        return .deferred { [service] responder in
            OSThread.startDetached(name: "sokuho-channel") {
                defer { service.channelRequests.subtract(1, ordering: .relaxed) }
                do throws(FanoutError) { responder.respond(try operation(runtime)) } catch {
                    switch error.kind {
                    case .refused: responder.respond(.error(status: 502, code: "apns_refused", message: error.message))
                    default: responder.respond(.error(status: 503, code: "apns_unavailable", message: error.message))
                    }
                }
            }
        }
    }

    /// A channel id is base64 and may hold `/`, `+` and `=`: percent-encoded in its URL.
    static func channelURL(_ id: ChannelID, _ runtime: AppRuntime) -> String {
        Self.channelsPath + "/" + percentEncoded(id.text, keepingSlash: false) + "?app=" + runtime.app.bundleID.text
            + "&environment=" + runtime.app.environment.rawValue
    }

    /// The app named by `?app=…&environment=…`.
    private static func queryApp(_ request: HTTPRequest, service: Service) -> Result<AppRuntime, AnswerError> {
        let app: BundleID, environment: Environment
        do {
            app = try bundle(request.queryValue("app"), field: "app")
            environment = try Self.environment(request.queryValue("environment"), field: "environment")
        } catch {
            return .failure(AnswerError(.response(.error(status: 400, code: "invalid_query",
                                                         message: "?\(error.description) (the query names the app: ?app=<bundle id>&environment=production|sandbox)"))))
        }
        guard let runtime = service.app(app, environment) else { return .failure(AnswerError(unknownApp(app, environment))) }
        return .success(runtime)
    }

    private static func bundle(_ text: String?, field: String) throws(EventError) -> BundleID {
        guard let text else { throw EventError(field: field, "is required: the app's bundle ID") }
        do throws(ValidationError) { return try BundleID(text) } catch { throw EventError(field: field, error.message) }
    }

    private static func environment(_ text: String?, field: String) throws(EventError) -> Environment {
        guard let text, let environment = try? Environment(name: text) else {
            throw EventError(field: field, "must be \"production\" or \"sandbox\"")
        }
        return environment
    }
}

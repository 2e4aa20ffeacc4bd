import DaemonConfiguration
import Runtime
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
/// Each is a request to APNs' channel host that may take seconds: it goes on the app's kept
/// channel-host connection (`ChannelClient`) and answers `.deferred` when APNs has — no thread and
/// no connection per request, and the API thread never waits. Per app, 4 are on the wire at once
/// and up to 64 wait; past that 429 with Retry-After (an API client in a loop must not pile up).
extension Router {
    package static let channelsPath = "/v1/channels"

    /// The answer for a channel route, or nil when the path is not one. The caller checked the admin token.
    package func channelAnswer(_ request: HTTPRequest, service: Service) -> HTTPAnswer? {
        switch request.method {
        case "GET" where request.path == Self.channelsPath:
            let runtime: AppRuntime
            switch Self.queryApp(request, service: service) {
            case let .failure(refusal): return refusal.answer
            case let .success(found): runtime = found
            }
            return Self.deferred { done in runtime.channels.list { done($0.map { ids in
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("app"); writer.string(runtime.app.bundleID.text)
                writer.key("environment"); writer.string(runtime.app.environment.rawValue)
                writer.key("channels"); writer.beginArray(); for id in ids { writer.string(id.text) }; writer.endArray()
                writer.endObject()
                return .json(writer.bytes)
            }) } }
        case "POST" where request.path == Self.channelsPath:
            let policy: MessageStoragePolicy
            let runtime: AppRuntime
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
            return Self.deferred { done in runtime.channels.create(policy: policy) { done($0.map { id in
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("channel"); writer.string(id.text)
                writer.key("storagePolicy"); writer.int(policy.rawValue)
                writer.endObject()
                var response = HTTPResponse.json(status: 201, writer.bytes)
                response.headers.append(("Location", Self.channelURL(id, runtime)))
                return response
            }) } }
        case "DELETE" where request.path.hasPrefix(Self.channelsPath + "/"):
            let id: ChannelID
            do throws(ValidationError) { id = try ChannelID(String(request.path.dropFirst(Self.channelsPath.count + 1))) } catch {
                return .response(.error(status: 404, code: "not_found", message: "channelId: \(error.message)"))
            }
            let runtime: AppRuntime
            switch Self.queryApp(request, service: service) {
            case let .failure(refusal): return refusal.answer
            case let .success(found): runtime = found
            }
            return Self.deferred { done in runtime.channels.delete(id) { done($0.map { alreadyDeleted in
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("channel"); writer.string(id.text)
                writer.key("deleted"); writer.bool(true)
                writer.key("alreadyDeleted"); writer.bool(alreadyDeleted)
                writer.endObject()
                return .json(writer.bytes)
            }) } }
        default:
            guard request.path == Self.channelsPath || request.path.hasPrefix(Self.channelsPath + "/") else { return nil }
            return .response(.error(status: 404, code: "not_found", message: "no such route: \(request.method) \(request.path)"))
        }
    }

    /// Answers later with what the channel call hands to `done` (on a loop thread of the app's
    /// channel connection, or at once when the call is refused).
    private static func deferred(_ start: @escaping @Sendable (_ done: @escaping @Sendable (Result<HTTPResponse, FanoutError>) -> Void) -> Void)
        -> HTTPAnswer {
        .deferred { responder in
            start { result in
                switch result {
                case let .success(response): responder.respond(response)
                case let .failure(error): responder.respond(refusal(error))
                }
            }
        }
    }

    /// APNs' refusal is 502, too many waiting 429, no answer 503.
    private static func refusal(_ error: FanoutError) -> HTTPResponse {
        switch error.kind {
        case .refused:
            return .error(status: 502, code: "apns_refused", message: error.message)
        case .busy:
            var response = HTTPResponse.error(status: 429, code: "too_many_channel_requests",
                                              message: "\(error.message); retry after the Retry-After seconds")
            response.headers.append(("Retry-After", "1"))
            return response
        default:
            return .error(status: 503, code: "apns_unavailable", message: error.message)
        }
    }

    /// A channel id is base64 and may hold `/`, `+` and `=`: percent-encoded in its URL.
    package static func channelURL(_ id: ChannelID, _ runtime: AppRuntime) -> String {
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

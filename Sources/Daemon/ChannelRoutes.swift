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
/// The handlers are static: they see the runtime only through their `ChannelDesk`.
extension Router {
    package static let channelsPath = "/v1/channels"

    /// The answer for a channel route, or nil when the path is not one. The caller checked the admin token.
    package static func channelAnswer(_ request: HTTPRequest, channels desk: any ChannelDesk) -> HTTPAnswer? {
        switch request.method {
        case "GET" where request.path == Self.channelsPath:
            let app: QueriedApp
            switch Self.queryApp(request, desk: desk) {
            case let .failure(refusal): return refusal.answer
            case let .success(found): app = found
            }
            return Self.deferred { done in app.channels.list { done($0.map { ids in
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("app"); writer.string(app.bundle.text)
                writer.key("environment"); writer.string(app.environment.rawValue)
                writer.key("channels"); writer.beginArray(); for id in ids { writer.string(id.text) }; writer.endArray()
                writer.endObject()
                return .json(writer.bytes)
            }) } }
        case "POST" where request.path == Self.channelsPath:
            let policy: MessageStoragePolicy
            let app: QueriedApp
            do {
                var fields = try JSONObjectFields<EventError>(json: request.body, root: "body")
                let bundle = try fields.required("app") { (value, field) throws(EventError) in try Self.bundle(value.stringValue, field: field) }
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
                guard let found = desk.channels(of: bundle, environment) else { return Self.unknownApp(bundle, environment) }
                app = QueriedApp(bundle: bundle, environment: environment, channels: found)
            } catch {
                return .response(.error(status: 400, code: "invalid_body", message: error.description))
            }
            return Self.deferred { done in app.channels.create(policy: policy) { done($0.map { id in
                var writer = JSONWriter()
                writer.beginObject()
                writer.key("channel"); writer.string(id.text)
                writer.key("storagePolicy"); writer.int(policy.rawValue)
                writer.endObject()
                var response = HTTPResponse.json(status: 201, writer.bytes)
                response.headers.append(("Location", Self.channelURL(id, app.bundle, app.environment)))
                return response
            }) } }
        case "DELETE" where request.path.hasPrefix(Self.channelsPath + "/"):
            let id: ChannelID
            do throws(ValidationError) { id = try ChannelID(String(request.path.dropFirst(Self.channelsPath.count + 1))) } catch {
                // The path names a channel, just not a well-formed one: the client's mistake (400), not
                // a channel that is gone (a DELETE of one of those answers 200, alreadyDeleted).
                return .response(.error(status: 400, code: "invalid_path", message: "channelId: \(error.message)"))
            }
            let app: QueriedApp
            switch Self.queryApp(request, desk: desk) {
            case let .failure(refusal): return refusal.answer
            case let .success(found): app = found
            }
            return Self.deferred { done in app.channels.delete(id) { done($0.map { alreadyDeleted in
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
    package static func channelURL(_ id: ChannelID, _ app: BundleID, _ environment: Environment) -> String {
        Self.channelsPath + "/" + percentEncoded(id.text, keepingSlash: false) + "?app=" + app.text
            + "&environment=" + environment.rawValue
    }

    /// An app a channel request named, with its channel client.
    private struct QueriedApp: Sendable {
        let bundle: BundleID
        let environment: Environment
        let channels: ChannelClient
    }

    /// The app named by `?app=…&environment=…`.
    private static func queryApp(_ request: HTTPRequest, desk: any ChannelDesk) -> Result<QueriedApp, AnswerError> {
        let app: BundleID, environment: Environment
        do {
            app = try bundle(request.queryValue("app"), field: "app")
            environment = try Self.environment(request.queryValue("environment"), field: "environment")
        } catch {
            return .failure(AnswerError(.response(.error(status: 400, code: "invalid_query",
                                                         message: "?\(error.description) (the query names the app: ?app=<bundle id>&environment=production|sandbox)"))))
        }
        guard let channels = desk.channels(of: app, environment) else { return .failure(AnswerError(unknownApp(app, environment))) }
        return .success(QueriedApp(bundle: app, environment: environment, channels: channels))
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

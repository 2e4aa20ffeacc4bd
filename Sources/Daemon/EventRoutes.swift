import DaemonConfiguration
import Runtime
import Crypto
import Fanout
import HTTPAPI
import JSONCore
import TokenStore
import Vocabulary

/// The backends' event routes: `POST /v1/events` (202 with the event's URL, 200 when the same
/// event was already sent, 409 for another body under a sent serial or an older serial) and
/// `GET /v1/events/{key}/{serial}` (the queue's view while it knows the event, else the store's
/// record, else the cluster's ledger). The handlers are static: they see the runtime only
/// through their `EventDesk`.
extension Router {
    static func submit(_ request: HTTPRequest, events: any EventDesk) -> HTTPResponse {
        switch events.submit(request.body) {
        case let .refused(.clusterUnavailable, message):
            return Self.clusterUnavailable(message)
        case let .refused(refusal, message):
            return .error(status: Self.status(of: refusal), code: refusal.code, message: message)
        case let .alreadySent(report):
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("id"); writer.string(EventQueue.id(key: report.eventKey, serial: report.serial))
            writer.key("state"); writer.string("done")
            writer.key("alreadySent"); writer.bool(true)
            writer.key("report"); writer.raw(report.json)
            writer.endObject()
            return .json(writer.bytes)
        case let .accepted(entry, warnings):
            return Self.accepted(id: entry.id, state: entry.state.rawValue, cluster: false, warnings: warnings)
        case let .acceptedByCluster(id, warnings):
            return Self.accepted(id: id, state: "queued", cluster: true, warnings: warnings)
        }
    }

    /// 202 with the event's URL; `cluster`: its shards are queued for the cluster's nodes;
    /// `warnings` (only when there are any): what one provider cannot carry while the others send.
    static func accepted(id: String, state: String, cluster: Bool, warnings: [String] = []) -> HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("id"); writer.string(id)
        writer.key("url"); writer.string(eventURL(id))
        writer.key("state"); writer.string(state)
        if cluster { writer.key("cluster"); writer.bool(true) }
        if !warnings.isEmpty {
            writer.key("warnings"); writer.beginArray()
            for warning in warnings { writer.string(warning) }
            writer.endArray()
        }
        writer.endObject()
        var response = HTTPResponse.json(status: 202, writer.bytes)
        response.headers.append(("Location", eventURL(id)))
        return response
    }

    /// `/v1/events/{key}/{serial}` with the key percent-encoded: a key may hold any character but
    /// NUL ("eew 2026?#1"), and its URL must lead back to it (the server decodes the path).
    package static func eventURL(_ id: String) -> String { "/v1/events/" + percentEncoded(id, keepingSlash: true) }

    /// Every byte but the unreserved ones (and `/` when `keepingSlash`) as %XX.
    package static func percentEncoded(_ text: String, keepingSlash: Bool) -> String {
        var bytes: [UInt8] = []
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: ":"):
                bytes.append(byte)
            case UInt8(ascii: "/") where keepingSlash:
                bytes.append(byte)
            default:
                bytes.append(UInt8(ascii: "%"))
                Hex.append(byte, to: &bytes, uppercase: true)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `{key}/{serial}`: the queue's view while it is known there (in memory: answered at once),
    /// else the store's record or the cluster's ledger, read on the events' worker.
    static func eventStatus(_ id: String, events: any EventDesk, worker: APIWorker) -> HTTPAnswer {
        if let entry = events.queuedEvent(id) {
            var writer = JSONWriter()
            write(entry, to: &writer)
            return .response(.json(writer.bytes))
        }
        return worker.answer { .response(recordedStatus(id, events: events)) }
    }

    /// `GET /v1/events`: the last events the queue knows.
    static func recentEvents(_ events: any EventDesk) -> HTTPResponse {
        var writer = JSONWriter()
        writer.beginObject(); writer.key("events"); writer.beginArray()
        for entry in events.recentEvents() { write(entry, to: &writer) }
        writer.endArray(); writer.endObject()
        return .json(writer.bytes)
    }

    static func recordedStatus(_ id: String, events: any EventDesk) -> HTTPResponse {
        guard let slash = id.lastIndex(of: "/"), let serial = UInt32(id[id.index(after: slash)...]) else {
            return .error(status: 404, code: "not_found", message: "an event URL is /v1/events/{key}/{serial}")
        }
        let key = String(id[..<slash])
        guard let record = events.recordedEvent(key: key, serial: serial) else {
            switch events.clusterStatus(key: key, serial: serial) {
            case let .found(status)?:
                return .json(status)
            case let .unreachable(problem)?:
                // Not 404: a backend reading 404 as "never accepted" would send the event again.
                return Self.clusterUnavailable("the event's state is in the cluster's Redis, which this node cannot reach (\(problem)); ask again after Retry-After, or ask another node")
            case .unknown?, nil:
                return .error(status: 404, code: "not_found", message: "no event '\(key)' serial \(serial)")
            }
        }
        var writer = JSONWriter()
        writer.beginObject()
        writer.key("id"); writer.string(id)
        writer.key("state"); writer.string(record.phase == .done ? "done" : record.phase == .stopped ? "stopped" : "queued")
        writer.key("report"); if record.report.isEmpty { writer.null() } else { writer.raw(record.report) }
        writer.endObject()
        return .json(writer.bytes)
    }

    package static func write(_ entry: EventQueue.Entry, to writer: inout JSONWriter) {
        writer.beginObject()
        writer.key("id"); writer.string(entry.id)
        writer.key("key"); writer.string(entry.event.key)
        writer.key("serial"); writer.int(entry.event.serial)
        writer.key("kind"); writer.string(entry.event.kind.rawValue)
        writer.key("app"); writer.string(entry.app.name)
        writer.key("urgent"); writer.bool(entry.urgent)
        writer.key("state"); writer.string(entry.state.rawValue)
        writer.key("report"); if let report = entry.report { writer.raw(report.json) } else { writer.null() }
        writer.key("error"); if let error = entry.error { writer.string(error) } else { writer.null() }
        writer.endObject()
    }

    /// 503 `cluster_unavailable` with Retry-After: the link to Redis backs off up to 5 s, and a
    /// client that retries at once, as a 503 without it invites, only meets the same answer.
    static func clusterUnavailable(_ message: String) -> HTTPResponse {
        var response = HTTPResponse.error(status: 503, code: Service.Refusal.clusterUnavailable.code, message: message)
        response.headers.append(("Retry-After", "2"))
        return response
    }

    /// The HTTP status of each refusal: the caller's mistake 400/409/422, the daemon's state 503.
    static func status(of refusal: Service.Refusal) -> Int {
        switch refusal {
        case .invalidEvent: 400
        case .superseded, .conflict, .lost: 409
        case .unknownApp: 422
        case .standby, .clusterUnavailable, .storeUnavailable: 503
        }
    }
}

import APNs
import JSONCore

/// How an event's values are read and refused (names, epoch seconds, embedded objects, the alert):
/// one message per kind of value, shared by the event's fields and its groups'.
enum EventValues {
    static func name(_ value: JSONValue, field: String) throws(EventError) -> String {
        guard let text = value.stringValue, !text.isEmpty, text.utf8.count <= FanoutEvent.maximumNameBytes else {
            throw EventError(field: field, "must be a non-empty string of at most \(FanoutEvent.maximumNameBytes) bytes")
        }
        // The store refuses control characters in its keys: refused here, naming the field, not
        // later as a store failure (a key with one was answered 503 store_unavailable).
        guard !text.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw EventError(field: field, "must not contain control characters (a newline, a tab, NUL …)")
        }
        return text
    }

    /// An event key: a name, and part of the event's URL `/v1/events/{key}/{serial}`, so no
    /// segment of it may be "." or "..": clients normalise those away and would ask for another event.
    static func key(_ value: JSONValue, field: String) throws(EventError) -> String {
        let text = try name(value, field: field)
        guard !text.split(separator: "/", omittingEmptySubsequences: false).contains(where: { $0 == "." || $0 == ".." }) else {
            throw EventError(field: field, "must not have '.' or '..' as a '/'-separated part: it is part of the event's URL")
        }
        return text
    }

    static func epoch(_ value: JSONValue, field: String) throws(EventError) -> Int64 {
        guard let seconds = value.int64Value, seconds > 0, seconds < 100_000_000_000 else {
            throw EventError(field: field, "must be whole seconds since 1970 (e.g. 1787418000), not milliseconds")
        }
        return seconds
    }

    static func object(_ value: JSONValue, field: String) throws(EventError) -> [UInt8] {
        guard value.isObject else { throw EventError(field: field, "must be a JSON object") }
        var writer = JSONWriter()
        writer.value(value)
        return writer.bytes
    }

    static func alert(_ value: JSONValue, field: String) throws(EventError) -> LiveActivityAlert {
        var fields = try JSONObjectFields<EventError>(value, path: field, root: "event")
        let title = try fields.required("title") { (value, field) throws(EventError) in try text(value, field: field) }
        let body = try fields.required("body") { (value, field) throws(EventError) in try text(value, field: field) }
        let sound = try fields.optional("sound") { (value, field) throws(EventError) in try text(value, field: field) }
        try fields.rejectUnknown()
        return LiveActivityAlert(title: title, body: body, sound: sound)
    }

    private static func text(_ value: JSONValue, field: String) throws(EventError) -> String {
        guard let text = value.stringValue else { throw EventError(field: field, "must be a string") }
        return text
    }
}

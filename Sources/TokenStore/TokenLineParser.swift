import APNs
import Glibc
import Vocabulary

// Over 300 lines on purpose: one parser for one line format, whose scanning steps (strings with
// every escape, hex tokens, topics) are private to it and read top to bottom as the grammar.
// Split across files they would have to become module-visible, for no reader's gain.

/// One line of a token file: a token registration, or an iOS 17 Live Activity's update token
/// (a line with `activityId`).
public enum TokenLine: Sendable, Equatable {
    case registration(TokenRegistration)
    case activity(ActivityRecord)
}

/// Parses one line of a token file (`sokuho tokens import`) straight from its bytes. A token line:
///
///     {"installationId":"…","app":"com.example.eew","environment":"sandbox","kind":"pushToStart",
///      "token":"<hex>","registeredAt":1717000000000,"broadcast":true,"topics":[{"name":"region:301","minLevel":3}]}
///
/// An Android installation's line has `"kind":"fcm"` and its FCM registration token as
/// `"token"`, written as the token's own text (1 to 255 characters of `A-Za-z0-9_:-`), not hex —
/// the one field whose reading depends on another, so the token is decoded once the line is read:
///
///     {"installationId":"…","app":"com.example.eew","environment":"sandbox","kind":"fcm",
///      "token":"dGVzdA:APA91b…","registeredAt":1717000000000,"topics":[{"name":"region:301","minLevel":3}]}
///
/// `broadcast` (iOS 18) is refused on an fcm line, and an installation holds one platform's
/// tokens: an fcm line for an installation that has APNs tokens (or the reverse) fails the import
/// with the installation named (`Installation.checkPlatform`).
///
/// and an activity line, the update token `sokuho activities register` stores:
///
///     {"activityId":"…","app":"com.example.eew","environment":"sandbox","eventKey":"eew-…",
///      "topic":"region:301","token":"<hex>","startedAt":1717000000000}
///
/// A focused strict JSON reader for these two shapes: a million lines parse in well under a second
/// without building a `JSONValue` tree. It accepts exactly what RFC 8259 accepts for them
/// (any whitespace, any member order, all string escapes) and refuses unknown or repeated
/// fields, so a typo is reported rather than ignored. The first field that belongs to one shape
/// only decides the line's shape, and a field of the other shape is refused where it stands.
/// `minLevel` is optional (default 0), and so are `registeredAt`, when the phone registered the
/// token (ms since 1970; see `TokenRegistration.registeredAt`), `broadcast` (absent: keep what
/// the store knows; see `TokenRegistration.broadcast`) and `startedAt` (default: now).
public struct TokenLineParser {
    /// Why a line was refused, with the byte column (1-based) where it went wrong.
    public struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        public let column: Int
        public let message: String
        public var description: String { "\(message) (column \(column))" }
    }

    private let bytes: UnsafeRawBufferPointer
    private var index = 0

    private init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// How far past `now` a `registeredAt` or `startedAt` may lie (clock skew between machines): one day.
    public static let registeredAtTolerance: UInt64 = 86_400_000
    /// `registeredAt` and `startedAt` values that are seconds, not milliseconds: refused.
    public static let secondsLookalike: Range<UInt64> = 1_000_000_000..<100_000_000_000

    /// Parses one line (without its newline), validated against `StoreLimits`. `now` (ms since
    /// 1970) bounds `registeredAt` and `startedAt` and is an activity's default `startedAt`; an
    /// import passes the time it started.
    public static func parseLine(_ line: UnsafeRawBufferPointer, now: UInt64 = WallClock.milliseconds()) throws(Failure) -> TokenLine {
        var parser = TokenLineParser(line)
        return try parser.parseObject(now: now)
    }

    public static func parseLine(_ line: String, now: UInt64 = WallClock.milliseconds()) throws(Failure) -> TokenLine {
        let bytes = Array(line.utf8)
        let result = bytes.withUnsafeBytes { buffer in Result { () throws(Failure) in try parseLine(buffer, now: now) } }
        return try result.get()
    }

    /// Parses a token line (an activity line is refused): see `parseLine`.
    public static func parse(_ line: String, now: UInt64 = WallClock.milliseconds()) throws(Failure) -> TokenRegistration {
        guard case let .registration(registration) = try parseLine(line, now: now) else {
            throw Failure(column: 1, message: "an activity line where a token line was expected")
        }
        return registration
    }

    private func fail(_ message: String) -> Failure { Failure(column: index + 1, message: message) }

    private enum Shape { case registration, activity }

    private mutating func parseObject(now: UInt64) throws(Failure) -> TokenLine {
        var installationID: String?, app: String?, environment: Environment?, kind: TokenKind?
        var token: (column: Int, text: UnsafeRawBufferPointer)?, registeredAt: UInt64?, broadcast: Bool?, topics: [TopicSubscription]?
        var activityID: String?, eventKey: String?, startedAt: UInt64?, activityTopic: String?
        // The shape, and the field that decided it (for the message refusing the other shape's).
        var shape: (Shape, field: String)?
        try expect(UInt8(ascii: "{"), "a line must be one JSON object ({…})")
        var first = true
        while true {
            skipWhitespace()
            if peek() == UInt8(ascii: "}") && first { index += 1; break }
            let keyStart = index
            let key = try parseString()
            try expect(UInt8(ascii: ":"), "expected ':' after \"\(key)\"")
            skipWhitespace()
            // Refuses a repeated field, and a field of the other shape than the line's (`wanted`:
            // the shape the field belongs to only; nil for the fields both shapes have).
            func claim<T>(_ value: T?, _ wanted: Shape? = nil) throws(Failure) {
                if value != nil { throw Failure(column: keyStart + 1, message: "field \"\(key)\" appears twice") }
                guard let wanted else { return }
                guard let (decided, field) = shape else { shape = (wanted, key); return }
                guard decided == wanted else {
                    let line = decided == .activity ? "an activity line" : "a token line"
                    throw Failure(column: keyStart + 1, message: "field \"\(key)\" does not belong in \(line) (it has \"\(field)\")")
                }
            }
            switch key {
            case "installationId":
                try claim(installationID, .registration)
                installationID = try parseName("installationId")
                // The API refuses such an id (the phone could never PUT or DELETE it again); so
                // does an import, one rule for both (`store check` lists ones stored before).
                guard StoreLimits.isAddressableInstallationID(installationID!) else {
                    throw Failure(column: keyStart + 1, message: "installationId \(StoreLimits.addressableInstallationIDRule): it is a segment of /v1/installations/{id}, so the phone could never change or delete it")
                }
            case "app":
                try claim(app)
                app = try parseName("app")
            case "environment":
                try claim(environment)
                environment = try parseChoice("environment", ["production", "sandbox"], Environment.init(rawValue:))
            case "kind":
                try claim(kind, .registration)
                kind = try parseChoice("kind", ["pushToStart", "device", "fcm"], TokenKind.init(name:))
            case "token":
                try claim(token)
                token = try parseTokenText()
            case "registeredAt":
                try claim(registeredAt, .registration)
                registeredAt = try parseMilliseconds("registeredAt", now: now)
            case "broadcast":
                try claim(broadcast, .registration)
                broadcast = try parseBoolean("broadcast")
            case "topics":
                try claim(topics, .registration)
                topics = try parseTopics()
            case "activityId":
                try claim(activityID, .activity)
                activityID = try parseName("activityId")
            case "eventKey":
                try claim(eventKey, .activity)
                eventKey = try parseName("eventKey")
            case "topic":
                try claim(activityTopic, .activity)
                activityTopic = try parseName("topic")
            case "startedAt":
                try claim(startedAt, .activity)
                startedAt = try parseMilliseconds("startedAt", now: now)
            default:
                throw Failure(column: keyStart + 1, message: "unknown field \"\(key)\"; a token line has installationId, app, environment, kind, token, registeredAt (optional), broadcast (optional), topics; an activity line has activityId, app, environment, eventKey, topic (optional), token, startedAt (optional)")
            }
            first = false
            skipWhitespace()
            guard let next = peek() else { throw fail("unexpected end of line; the object is not closed with '}'") }
            index += 1
            if next == UInt8(ascii: "}") { break }
            guard next == UInt8(ascii: ",") else { index -= 1; throw fail("expected ',' or '}' after a value") }
        }
        skipWhitespace()
        guard index == bytes.count else { throw fail("unexpected text after the JSON object") }
        func require<T>(_ value: T?, _ field: String) throws(Failure) -> T {
            guard let value else { throw fail("missing field \"\(field)\"") }
            return value
        }
        if shape?.0 == .activity {
            let activity = ActivityRecord(id: try require(activityID, "activityId"), app: try require(app, "app"),
                                          environment: try require(environment, "environment"),
                                          updateToken: try decodeToken(try require(token, "token"), kind: nil), eventKey: try require(eventKey, "eventKey"),
                                          startedAt: startedAt ?? now, topic: activityTopic)
            do { try activity.validate() } catch { throw Failure(column: 1, message: error.description) }
            return .activity(activity)
        }
        let tokenKind = try require(kind, "kind")
        let registration = TokenRegistration(installationID: try require(installationID, "installationId"), app: try require(app, "app"),
                                             environment: try require(environment, "environment"), kind: tokenKind,
                                             token: try decodeToken(try require(token, "token"), kind: tokenKind), topics: try require(topics, "topics"),
                                             registeredAt: registeredAt, broadcast: broadcast)
        do { try registration.validate() } catch { throw Failure(column: 1, message: error.description) }
        return .registration(registration)
    }

    private func peek() -> UInt8? { index < bytes.count ? bytes[index] : nil }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0a, 0x0d: index += 1
            default: return
            }
        }
    }

    /// `message` is built only on failure: the happy path of a million lines allocates no text.
    private mutating func expect(_ byte: UInt8, _ message: @autoclosure () -> String) throws(Failure) {
        skipWhitespace()
        guard peek() == byte else { throw fail(message()) }
        index += 1
    }

    /// A string that must be one of `names`.
    private mutating func parseChoice<T>(_ field: String, _ names: [String], _ make: (String) -> T?) throws(Failure) -> T {
        let start = index
        let name = try parseString()
        guard let value = make(name) else {
            let choices = names.map { "\"\($0)\"" }.joined(separator: " or ")
            throw Failure(column: start + 1, message: "\(field) must be \(choices), not \"\(name)\"")
        }
        return value
    }

    private mutating func parseName(_ field: String) throws(Failure) -> String {
        let start = index
        let name = try parseString()
        do { try StoreLimits.checkName(name, field: field) } catch { throw Failure(column: start + 1, message: error.description) }
        return name
    }

    /// A JSON string with all escapes, validated as UTF-8.
    private mutating func parseString() throws(Failure) -> String {
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else { throw fail("expected a string in double quotes") }
        index += 1
        let start = index
        // Fast path: no escapes. ASCII (ids, bundle ids, topics) needs no UTF-8 validation.
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                let raw = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                if ascii { return String(decoding: raw.bindMemory(to: UInt8.self), as: UTF8.self) }
                guard let text = String(validating: Array(raw), as: UTF8.self) else {
                    throw Failure(column: start + 1, message: "the string is not valid UTF-8")
                }
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw fail("a control character must be escaped inside a string") }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        var decoded = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: decoded, as: UTF8.self) else {
                    throw Failure(column: start + 1, message: "the string is not valid UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                guard let escape = peek() else { break }
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(escape)
                case UInt8(ascii: "b"): decoded.append(0x08)
                case UInt8(ascii: "f"): decoded.append(0x0c)
                case UInt8(ascii: "n"): decoded.append(0x0a)
                case UInt8(ascii: "r"): decoded.append(0x0d)
                case UInt8(ascii: "t"): decoded.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try parseHex4()
                    if (0xd800...0xdbff).contains(scalar) {
                        guard peek() == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u") else {
                            throw fail("a \\u surrogate must come in a pair")
                        }
                        index += 2
                        let low = try parseHex4()
                        guard (0xdc00...0xdfff).contains(low) else { throw fail("a \\u surrogate must come in a pair") }
                        scalar = 0x10000 + ((scalar - 0xd800) << 10) + (low - 0xdc00)
                    } else if (0xdc00...0xdfff).contains(scalar) {
                        throw fail("a \\u surrogate must come in a pair")
                    }
                    decoded.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
                default:
                    index -= 1
                    throw fail("invalid escape '\\\(Unicode.Scalar(escape))'")
                }
            default:
                if byte < 0x20 { index -= 1; throw fail("a control character must be escaped inside a string") }
                decoded.append(byte)
            }
        }
        throw fail("unexpected end of line inside a string")
    }

    private mutating func parseHex4() throws(Failure) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = peek(), let digit = Hex.value(byte) else { throw fail("\\u needs four hex digits") }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    /// The token's text between its quotes (no escapes: neither hex nor an FCM token needs
    /// one), decoded by `decodeToken` once the line's kind is known.
    private mutating func parseTokenText() throws(Failure) -> (column: Int, text: UnsafeRawBufferPointer) {
        let start = index
        guard peek() == UInt8(ascii: "\""), let base = bytes.baseAddress,
              let close = memchr(base + index + 1, Int32(UInt8(ascii: "\"")), bytes.count - index - 1) else {
            throw fail(peek() == UInt8(ascii: "\"") ? "unexpected end of line inside the token" : "token must be a string (hex digits, or an fcm token's text)")
        }
        let text = UnsafeRawBufferPointer(start: base + index + 1, count: base.distance(to: UnsafeRawPointer(close)) - index - 1)
        index += text.count + 2
        return (start + 1, text)
    }

    /// An fcm token is its text's bytes; every other (an APNs token, an activity's update token)
    /// is an even number of hex digits. Either is checked against the store's bounds for its kind.
    private func decodeToken(_ token: (column: Int, text: UnsafeRawBufferPointer), kind: TokenKind?) throws(Failure) -> [UInt8] {
        if kind == .fcm {
            let bytes = Array(token.text)
            do { try StoreLimits.checkToken(bytes, kind: .fcm) } catch { throw Failure(column: token.column, message: error.description) }
            return bytes
        }
        let malformed = Failure(column: token.column, message: "token must be an even number of hex digits (0-9, a-f)")
        guard token.text.count % 2 == 0 else { throw malformed }
        var bytes = [UInt8](repeating: 0, count: token.text.count / 2)
        guard bytes.withUnsafeMutableBytes({ Hex.decode(token.text, into: $0) }) else { throw malformed }
        do { try StoreLimits.checkToken(bytes) } catch { throw Failure(column: token.column, message: error.description) }
        return bytes
    }

    /// `[{"name":"region:301","minLevel":3}, …]`.
    private mutating func parseTopics() throws(Failure) -> [TopicSubscription] {
        guard peek() == UInt8(ascii: "[") else { throw fail("topics must be an array of {\"name\":…,\"minLevel\":…} objects") }
        index += 1
        var topics: [TopicSubscription] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") { index += 1; return topics }
        while true {
            topics.append(try parseTopic())
            skipWhitespace()
            guard let next = peek() else { throw fail("unexpected end of line inside topics") }
            index += 1
            if next == UInt8(ascii: "]") { return topics }
            guard next == UInt8(ascii: ",") else { index -= 1; throw fail("expected ',' or ']' in topics") }
        }
    }

    private mutating func parseTopic() throws(Failure) -> TopicSubscription {
        try expect(UInt8(ascii: "{"), "each topic must be an object {\"name\":…,\"minLevel\":…}")
        var name: String?
        var minLevel: UInt8?
        while true {
            let keyStart = index
            let key = try parseString()
            try expect(UInt8(ascii: ":"), "expected ':' after \"\(key)\"")
            skipWhitespace()
            switch key {
            case "name" where name == nil: name = try parseName("topic name")
            case "minLevel" where minLevel == nil: minLevel = try parseLevel()
            case "name", "minLevel": throw Failure(column: keyStart + 1, message: "topic field \"\(key)\" appears twice")
            default: throw Failure(column: keyStart + 1, message: "unknown topic field \"\(key)\"; a topic has name and minLevel")
            }
            skipWhitespace()
            guard let next = peek() else { throw fail("unexpected end of line inside a topic") }
            index += 1
            if next == UInt8(ascii: "}") { break }
            guard next == UInt8(ascii: ",") else { index -= 1; throw fail("expected ',' or '}' in a topic") }
            skipWhitespace()
        }
        guard let name else { throw fail("a topic is missing \"name\"") }
        return TopicSubscription(name: name, minLevel: minLevel ?? 0)
    }

    /// A whole number 0...255 written as JSON writes it (no leading zeros, no fraction).
    private mutating func parseLevel() throws(Failure) -> UInt8 {
        let start = index
        var value = 0
        var digits = 0
        while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
            digits += 1
            index += 1
            if value > 255 { break }
        }
        let malformed = digits == 0 || (digits > 1 && bytes[start] == UInt8(ascii: "0"))
        if let byte = peek(), byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") || byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
            throw Failure(column: start + 1, message: "minLevel must be a whole number from 0 to 255")
        }
        guard !malformed, value <= 255 else { throw Failure(column: start + 1, message: "minLevel must be a whole number from 0 to 255") }
        return UInt8(value)
    }

    /// `true` or `false`, nothing else (not a string, not 0 or 1).
    private mutating func parseBoolean(_ field: String) throws(Failure) -> Bool {
        if startsWith("true") { index += 4; return true }
        if startsWith("false") { index += 5; return false }
        throw fail("\(field) must be true or false")
    }

    private func startsWith(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        return count <= bytes.count - index && memcmp(bytes.baseAddress! + index, literal.utf8Start, count) == 0
    }

    /// Milliseconds since 1970 as a whole JSON number (no sign, fraction, exponent or leading
    /// zeros), at most a day past `now`: a time in microseconds, or a clock years ahead, is a
    /// mistake that would keep a dead token from ever being pruned (or an activity from expiring).
    private mutating func parseMilliseconds(_ field: String, now: UInt64) throws(Failure) -> UInt64 {
        let start = index
        let malformed = Failure(column: start + 1, message: "\(field) must be a whole number of milliseconds since 1970 (0 or more)")
        var value: UInt64 = 0
        var digits = 0
        var overflow = false
        while let byte = peek(), (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
            let (times10, o1) = value.multipliedReportingOverflow(by: 10)
            let (sum, o2) = times10.addingReportingOverflow(UInt64(byte - UInt8(ascii: "0")))
            overflow = overflow || o1 || o2
            value = sum
            digits += 1
            index += 1
        }
        guard digits > 0, !(digits > 1 && bytes[start] == UInt8(ascii: "0")) else { throw malformed }
        if let byte = peek(), byte == UInt8(ascii: ".") || byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") { throw malformed }
        let latest = now.addingReportingOverflow(TokenLineParser.registeredAtTolerance)
        if overflow || (!latest.overflow && value > latest.partialValue) {
            let shown = overflow ? "" : " (\(value) ms)"
            throw Failure(column: start + 1,
                          message: "\(field)\(shown) is more than a day after now (\(now) ms); it must be milliseconds since 1970")
        }
        // 10⁹ … 10¹¹ is 2001–5138 in seconds but Jan 1970 – Mar 1973 in milliseconds, before any
        // phone had a push token: seconds given where milliseconds belong. Read as milliseconds it
        // would make the token older than every 410, pruned by the first one.
        if TokenLineParser.secondsLookalike.contains(value) {
            throw Failure(column: start + 1,
                          message: "\(field) \(value) looks like seconds since 1970; it must be milliseconds (\(value)000)")
        }
        return value
    }
}

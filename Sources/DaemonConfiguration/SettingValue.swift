import APNs
import JSONCore

/// The readers of setting values. Each takes a `SettingInput` and the field it came from, and
/// throws a message that names the field and says what a valid value looks like.
package enum SettingValue {
    /// A string: a JSON string, or the (last) text given.
    package static func string(_ input: SettingInput, field: String, expected: String) throws(ConfigurationError) -> String {
        switch input {
        case let .json(.string(text)): return text
        case .json: throw ConfigurationError(field: field, "must be \(expected), as a JSON string")
        case let .text(values): return values.last ?? ""
        }
    }

    /// A JSON value: the file's, or the (last) text given parsed as JSON — a list or object from a
    /// flag or variable (`--apps`, `SOKUHO_CLUSTER`), so a container can be configured by variables alone.
    package static func json(_ input: SettingInput, field: String, expected: String) throws(ConfigurationError) -> JSONValue {
        switch input {
        case let .json(json): return json
        case let .text(values):
            do { return try JSONParser.parse(values.last ?? "") } catch {
                throw ConfigurationError(field: field, "must be \(expected) (as in the configuration file): \(error)")
            }
        }
    }

    /// A file or directory path: not empty, no NUL byte (the kernel would cut it there).
    package static func path(_ input: SettingInput, field: String) throws(ConfigurationError) -> String {
        let text = try string(input, field: field, expected: "a path")
        guard !text.isEmpty, !text.utf8.contains(0) else { throw ConfigurationError(field: field, "must be a non-empty path") }
        return text
    }

    package static func absolutePath(_ input: SettingInput, field: String) throws(ConfigurationError) -> String {
        let text = try path(input, field: field)
        guard text.hasPrefix("/") else {
            throw ConfigurationError(field: field, "must be an absolute path (e.g. /var/lib/sokuho), not '\(text)': the daemon's working directory is not yours")
        }
        return text
    }

    /// A whole number within `range`: a JSON number, or its digits as text.
    package static func integer(_ input: SettingInput, field: String, in range: ClosedRange<Int>, unit: String = "") throws(ConfigurationError) -> Int {
        let expected = "a whole number\(unit) from \(range.lowerBound) to \(range.upperBound)"
        let text: String
        switch input {
        case let .json(.number(digits)): text = digits
        case let .json(other): throw ConfigurationError(field: field, "must be \(expected), not \(other.jsonText)")
        case let .text(values): text = values.last ?? ""
        }
        guard let value = Int(text), range.contains(value) else { throw ConfigurationError(field: field, "must be \(expected), not '\(text)'") }
        return value
    }

    /// Whole seconds within `range`, as a `Duration`.
    package static func seconds(_ input: SettingInput, field: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Duration {
        .seconds(try integer(input, field: field, in: range, unit: " of seconds"))
    }

    /// One of the log formats, by name.
    package static func logFormat(_ input: SettingInput, field: String) throws(ConfigurationError) -> LogFormat {
        let names = LogFormat.allCases.map(\.rawValue).joined(separator: " or ")
        let text = try string(input, field: field, expected: names)
        guard let format = LogFormat(rawValue: text) else { throw ConfigurationError(field: field, "must be \(names), not '\(text)'") }
        return format
    }

    /// JSON true/false; as text also on/off, yes/no, 1/0. A flag without a value gives "" — true.
    package static func bool(_ input: SettingInput, field: String) throws(ConfigurationError) -> Bool {
        switch input {
        case let .json(.bool(flag)): return flag
        case .json: throw ConfigurationError(field: field, "must be true or false")
        case let .text(values):
            switch (values.last ?? "").lowercased() {
            case "", "true", "on", "yes", "1": return true
            case "false", "off", "no", "0": return false
            default: throw ConfigurationError(field: field, "must be true or false (or on/off, yes/no, 1/0), not '\(values.last ?? "")'")
            }
        }
    }

    /// A whole number within `range`, or nil for JSON null, "none", "off" or 0 — "no limit".
    package static func limit(_ input: SettingInput, field: String, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int? {
        switch input {
        case .json(.null): return nil
        case let .text(values) where ["none", "off", "0"].contains(values.last?.lowercased() ?? ""): return nil
        case .json(.number("0")): return nil
        default: break
        }
        do { return try integer(input, field: field, in: range) } catch {
            throw ConfigurationError(field: field, "\(error.message); null (none, 0 as text) for no limit")
        }
    }

    /// "HOST:PORT" addresses: a JSON array of strings, or the texts given (each flag, or the
    /// variable's comma-separated parts). At least one, none twice (the second bind would fail).
    package static func endpoints(_ input: SettingInput, field: String) throws(ConfigurationError) -> [Endpoint] {
        var texts: [(text: String, field: String)] = []
        switch input {
        case let .json(.array(items)):
            for (index, item) in items.enumerated() {
                let itemField = "\(field)[\(index)]"
                texts.append((try string(.json(item), field: itemField, expected: "HOST:PORT"), itemField))
            }
        case .json: throw ConfigurationError(field: field, "must be an array of \"HOST:PORT\" strings, e.g. [\"127.0.0.1:8080\"]")
        case let .text(values): texts = values.map { ($0, field) }
        }
        guard !texts.isEmpty else { throw ConfigurationError(field: field, "must name at least one HOST:PORT address") }
        var endpoints: [Endpoint] = []
        for (text, itemField) in texts {
            // Port 0: the system picks one, and `serve` prints which on its first line (tests, several daemons on one box).
            let parsed = try endpoint(text, field: itemField, ports: 0...65535)
            // Digits and dots only is meant as an IPv4 address: a typo (999.1.1.1, 127.0.0) would
            // pass --check-config as a host name and fail only at start.
            if parsed.host.allSatisfy({ $0 == "." || $0.isASCII && $0.isNumber }) {
                let parts = parsed.host.split(separator: ".", omittingEmptySubsequences: false)
                guard parts.count == 4, parts.allSatisfy({ !$0.isEmpty && $0.count <= 3 && Int($0).map { $0 <= 255 } == true }) else {
                    throw ConfigurationError(field: itemField, "\(parsed.host) is not an IPv4 address (four numbers from 0 to 255, e.g. 127.0.0.1)")
                }
            }
            guard !endpoints.contains(parsed) else { throw ConfigurationError(field: itemField, "\(parsed) is given twice; give each address once") }
            endpoints.append(parsed)
        }
        return endpoints
    }

    package static func endpoint(_ text: String, field: String, ports: ClosedRange<Int> = 1...65535) throws(ConfigurationError) -> Endpoint {
        do throws(ValidationError) { return try Endpoint(parsing: text, field: field, ports: ports) } catch {
            throw ConfigurationError(field: field, error.message)
        }
    }

    /// A rate limit: JSON `{"perSecond": N, "burst": M}` or null; as text "N", "N/M" or "off".
    /// Without a burst, twice the rate: a client may catch up after a pause, not flood.
    package static func rateLimit(_ input: SettingInput, field: String) throws(ConfigurationError) -> ServeConfiguration.RateLimit? {
        let range = 1...1_000_000
        switch input {
        case .json(.null): return nil
        case let .json(value):
            var draft: (perSecond: Int?, burst: Int?) = (nil, nil)
            try JSONObjectFields.read(value, path: field, root: "configuration", what: "a rate limit", members: [
                JSONMember("perSecond") { (value, field, draft) throws(ConfigurationError) in draft.perSecond = try integer(.json(value), field: field, in: range) },
                JSONMember("burst") { (value, field, draft) throws(ConfigurationError) in draft.burst = try integer(.json(value), field: field, in: range) },
            ], into: &draft)
            guard let perSecond = draft.perSecond else { throw ConfigurationError(field: field + ".perSecond", "is required (requests per second per client address)") }
            return ServeConfiguration.RateLimit(perSecond: perSecond, burst: draft.burst ?? 2 * perSecond)
        case let .text(values):
            let text = values.last ?? ""
            if text.lowercased() == "off" { return nil }
            let parts = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
            guard parts.count <= 2, let perSecond = Int(parts[0]), range.contains(perSecond),
                  let burst = parts.count == 2 ? Int(parts[1]) : 2 * perSecond, range.contains(burst) else {
                throw ConfigurationError(field: field, "must be REQUESTS_PER_SECOND or REQUESTS_PER_SECOND/BURST (whole numbers from 1 to \(range.upperBound)) or off, not '\(text)'")
            }
            return ServeConfiguration.RateLimit(perSecond: perSecond, burst: burst)
        }
    }
}

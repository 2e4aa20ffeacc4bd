import JSONCore
import Testing

/// `Sources/Daemon/openapi.json`, read for checking the daemon's answers against it: which
/// operation a request is, which statuses it may answer, and a JSON-Schema subset validator for
/// the bodies. The subset is what the spec uses (type, properties, required, additionalProperties,
/// items, enum, nullable, $ref, allOf/oneOf/anyOf, bounds); `unsupportedKeywords` lists any other
/// keyword, so the spec cannot rely on a rule this validator silently ignores.
struct OpenAPISpec {
    /// One documented operation: "GET" and "/v1/events/{key}/{serial}".
    struct Operation: Hashable, CustomStringConvertible {
        let method: String
        let path: String
        var description: String { "\(method) \(path)" }
    }

    let root: JSONValue
    let operations: [Operation]

    /// The keywords the validator checks, and those that only annotate (descriptions, defaults,
    /// string patterns: the server's own field checks are tested elsewhere).
    static let checkedKeywords: Set<String> = ["type", "properties", "required", "additionalProperties", "items", "enum", "nullable",
                                               "$ref", "allOf", "oneOf", "anyOf", "minimum", "maximum", "minItems", "maxItems"]
    static let annotationKeywords: Set<String> = ["description", "default", "pattern", "minLength", "maxLength"]

    /// The spec in the repository, found from the calling test file's path (the tests never read
    /// anything outside the repository): …/Tests/SimulatorTests/X.swift → …/Sources/Daemon/openapi.json.
    init(filePath: String = #filePath) throws {
        let parts = filePath.split(separator: "/", omittingEmptySubsequences: false)
        let tests = try #require(parts.lastIndex(of: "Tests"), "\(filePath) is not under Tests/")
        let path = parts[..<tests].joined(separator: "/") + "/Sources/Daemon/openapi.json"
        let bytes = readFile(path)
        try #require(!bytes.isEmpty, "cannot read \(path)")
        root = try JSONParser.parse(bytes)
        var operations: [Operation] = []
        for (path, item) in root["paths"]?.objectMembers ?? [] {
            for (method, _) in item.objectMembers ?? [] where ["get", "put", "post", "delete", "patch"].contains(method) {
                operations.append(Operation(method: method.uppercased(), path: path))
            }
        }
        self.operations = operations
    }

    /// The operation a request is: its method and a documented path whose segments match (a
    /// `{name}` segment matches any one non-empty segment; literal segments win over templates).
    func operation(_ method: String, _ requestPath: String) -> Operation? {
        let path = requestPath.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)[0]
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        var best: (operation: Operation, literals: Int)?
        for operation in operations where operation.method == method {
            let template = operation.path.split(separator: "/", omittingEmptySubsequences: false)
            guard template.count == segments.count else { continue }
            var literals = 0
            var matches = true
            for (expected, given) in zip(template, segments) {
                if expected.hasPrefix("{") && expected.hasSuffix("}") {
                    if given.isEmpty { matches = false; break }
                } else if expected == given {
                    literals += 1
                } else {
                    matches = false; break
                }
            }
            if matches, literals > best?.literals ?? -1 { best = (operation, literals) }
        }
        return best?.operation
    }

    /// The operation object of the spec.
    func object(_ operation: Operation) -> JSONValue? { root["paths"]?[operation.path]?[operation.method.lowercased()] }

    /// What is wrong with an answer to `operation`: a status it does not list, a content type other
    /// than the status's, a required header missing, a JSON body the status's schema refuses.
    func problems(_ operation: Operation, status: Int, headers: [String: [String]], body: String) -> [String] {
        guard let responses = object(operation)?["responses"] else { return ["\(operation) has no responses"] }
        guard let listed = responses[String(status)] else {
            let statuses = (responses.objectMembers ?? []).map(\.key).joined(separator: ", ")
            return ["\(operation) answered \(status), which it does not list (\(statuses)): \(body.prefix(300))"]
        }
        let response = resolve(listed)
        var problems: [String] = []
        for (name, header) in response["headers"]?.objectMembers ?? [] where resolve(header)["required"]?.boolValue == true {
            if headers[name.lowercased()]?.isEmpty ?? true { problems.append("\(operation) \(status): no \(name) header") }
        }
        guard let content = response["content"]?.objectMembers, let (mediaType, media) = content.first else {
            if !body.isEmpty { problems.append("\(operation) \(status): documented without a body but answered \(body.prefix(200))") }
            return problems
        }
        let contentType = headers["content-type"]?.first ?? ""
        guard contentType.lowercased().hasPrefix(mediaType) else {
            return problems + ["\(operation) \(status): Content-Type '\(contentType)', documented \(mediaType)"]
        }
        guard mediaType == "application/json", let schema = media["schema"] else { return problems }
        guard let value = try? JSONParser.parse(body) else {
            return problems + ["\(operation) \(status): the body is not JSON: \(body.prefix(200))"]
        }
        return problems + validate(value, schema, at: "\(operation) \(status) body")
    }

    /// The schema of `operation`'s JSON request body.
    func requestSchema(_ operation: Operation) -> JSONValue? {
        object(operation)?["requestBody"]?["content"]?["application/json"]?["schema"]
    }

    /// `#/components/schemas/Name` and friends; anything else as it is.
    func resolve(_ value: JSONValue) -> JSONValue {
        guard let reference = value["$ref"]?.stringValue, reference.hasPrefix("#/") else { return value }
        var target: JSONValue? = root
        for part in reference.dropFirst(2).split(separator: "/") { target = target?[String(part)] }
        return target.map(resolve) ?? .null
    }

    func schema(named name: String) -> JSONValue { .object([(key: "$ref", value: .string("#/components/schemas/" + name))]) }

    // MARK: The JSON-Schema subset

    /// Every way `value` breaks `schema`, each with its JSON path (empty: it conforms).
    func validate(_ value: JSONValue, _ schema: JSONValue, at path: String) -> [String] {
        if let reference = schema["$ref"]?.stringValue {
            let target = resolve(schema)
            guard target != .null else { return ["\(path): unresolved \(reference)"] }
            return validate(value, target, at: path)
        }
        // nullable (OpenAPI 3.0): null is allowed whatever else the schema says.
        if value == .null, schema["nullable"]?.boolValue == true { return [] }
        if let type = schema["type"]?.stringValue, !Self.has(type: type, value) {
            return ["\(path): expected \(type), got \(value.jsonText.prefix(200))"]
        }
        var problems: [String] = []
        if let choices = schema["enum"]?.arrayValue, !choices.contains(value) {
            problems.append("\(path): \(value.jsonText) is not one of \(JSONValue.array(choices).jsonText)")
        }
        for part in schema["allOf"]?.arrayValue ?? [] { problems += validate(value, part, at: path) }
        if let branches = schema["oneOf"]?.arrayValue {
            let results = branches.map { validate(value, $0, at: path) }
            let passing = results.filter(\.isEmpty).count
            if passing != 1 {
                problems.append("\(path): matches \(passing) of oneOf's \(branches.count) schemas, not 1: \(results.flatMap { $0 }.prefix(6))")
            }
        }
        if let branches = schema["anyOf"]?.arrayValue {
            let results = branches.map { validate(value, $0, at: path) }
            if !results.contains(where: \.isEmpty) { problems.append("\(path): matches none of anyOf: \(results.flatMap { $0 }.prefix(6))") }
        }
        if let number = value.doubleValue {
            if let minimum = schema["minimum"]?.doubleValue, number < minimum { problems.append("\(path): \(number) < minimum \(minimum)") }
            if let maximum = schema["maximum"]?.doubleValue, number > maximum { problems.append("\(path): \(number) > maximum \(maximum)") }
        }
        if let members = value.objectMembers {
            let properties = schema["properties"]
            for member in members {
                let memberPath = path + "." + member.key
                if let property = properties?[member.key] {
                    problems += validate(member.value, property, at: memberPath)
                } else if let extra = schema["additionalProperties"] {
                    if extra == .bool(false) {
                        problems.append("\(memberPath): not a documented member (additionalProperties: false)")
                    } else if extra.isObject {
                        problems += validate(member.value, extra, at: memberPath)
                    }
                }
            }
            for required in schema["required"]?.arrayValue ?? [] {
                if let key = required.stringValue, value[key] == nil { problems.append("\(path): required member '\(key)' is missing") }
            }
        }
        if let elements = value.arrayValue {
            if let minimum = schema["minItems"]?.int64Value, elements.count < minimum { problems.append("\(path): fewer than \(minimum) items") }
            if let maximum = schema["maxItems"]?.int64Value, elements.count > maximum { problems.append("\(path): more than \(maximum) items") }
            if let items = schema["items"] {
                for (index, element) in elements.enumerated() { problems += validate(element, items, at: "\(path)[\(index)]") }
            }
        }
        return problems
    }

    private static func has(type: String, _ value: JSONValue) -> Bool {
        switch (type, value) {
        case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("number", .number): true
        case ("integer", .number): value.int64Value != nil
        default: false
        }
    }

    /// Keywords in the spec's schemas the validator neither checks nor treats as an annotation,
    /// with where they are; and `$ref`s that lead nowhere.
    func unsupportedKeywords() -> [String] {
        var found: [String] = []
        func walkSchema(_ schema: JSONValue, _ path: String) {
            guard let members = schema.objectMembers else { return found.append("\(path): a schema that is not an object") }
            for (key, value) in members {
                if !Self.checkedKeywords.contains(key) && !Self.annotationKeywords.contains(key) { found.append("\(path).\(key)") }
                switch key {
                case "$ref": if resolve(schema) == .null { found.append("\(path): unresolved \(value.jsonText)") }
                case "properties": for (name, property) in value.objectMembers ?? [] { walkSchema(property, "\(path).properties.\(name)") }
                case "items": walkSchema(value, path + ".items")
                case "additionalProperties": if value.isObject { walkSchema(value, path + ".additionalProperties") }
                case "allOf", "oneOf", "anyOf": for (index, part) in (value.arrayValue ?? []).enumerated() { walkSchema(part, "\(path).\(key)[\(index)]") }
                default: break
                }
            }
        }
        for (name, schema) in root["components"]?["schemas"]?.objectMembers ?? [] { walkSchema(schema, "components.schemas.\(name)") }
        // The schemas inline in operations and responses: everything under a "schema" member.
        func walkAll(_ value: JSONValue, _ path: String) {
            if let reference = value["$ref"]?.stringValue, resolve(value) == .null { found.append("\(path): unresolved \(reference)") }
            for (key, member) in value.objectMembers ?? [] {
                if key == "schema" { walkSchema(member, path + ".schema") } else { walkAll(member, path + "." + key) }
            }
            for (index, element) in (value.arrayValue ?? []).enumerated() { walkAll(element, "\(path)[\(index)]") }
        }
        if let paths = root["paths"] { walkAll(paths, "paths") }
        if let responses = root["components"]?["responses"] { walkAll(responses, "components.responses") }
        return found
    }
}

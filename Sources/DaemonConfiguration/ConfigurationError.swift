import JSONCore

/// An invalid `sokuho serve` configuration: the field at fault and what to do about it. `field` is
/// where the value came from — a JSON path in the file (`apps[1].keyFile`), a flag (`--store`) or a
/// variable (`SOKUHO_STORE`) — so the person fixing it knows which of the three to edit.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
    public let field: String
    public let message: String

    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "\(field): \(message)" }
}

/// The file's objects are read by JSONCore's one strict reader, refusing in these terms.
extension ConfigurationError: JSONFieldError {}

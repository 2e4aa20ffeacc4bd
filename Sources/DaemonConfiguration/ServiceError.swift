/// The daemon could not start (or reload) with this configuration; the message names what.
public struct ServiceError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}

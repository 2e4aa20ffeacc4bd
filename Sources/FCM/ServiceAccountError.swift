import JSONCore

/// Why a service-account file was refused, naming the member (`private_key`, `token_uri`) and the
/// fix. The file-privacy rule and its exit codes (66 missing, 78 invalid) belong to the
/// configuration layer that reads the file; this is what it reports as "invalid".
public struct ServiceAccountError: Error, Sendable, Equatable, CustomStringConvertible, JSONFieldError {
    /// The member at fault (`project_id`), or "service account" for the whole file.
    public let field: String
    public let message: String

    public init(field: String, _ message: String) {
        self.field = field
        self.message = message
    }

    public var description: String { "service account \(field): \(message)" }

    /// Where a good file comes from, appended to refusals a fresh download fixes.
    static let download = "download the key again (Firebase console → Project settings → Service accounts → "
        + "Generate new private key) and use the file unchanged"
}

/// Where FCM HTTP v1 sends go (FCM.md, "Sending"): one message per request, no batch endpoint
/// (shut down in June 2024).
public enum FCMEndpoint {
    /// Google's host; the simulator serves the same path on loopback.
    public static let host = "fcm.googleapis.com"

    /// `/v1/projects/{project_id}/messages:send`. `projectID` comes from a checked `ServiceAccount`
    /// (lower-case letters, digits, `-`, `.`, `:`), so it needs no escaping in a path.
    public static func sendPath(projectID: String) -> String { "/v1/projects/" + projectID + "/messages:send" }

    /// The project of a send path, or nil when `path` is not `/v1/projects/{id}/messages:send`.
    public static func projectID(inSendPath path: String) -> String? {
        let prefix = "/v1/projects/", suffix = "/messages:send"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.utf8.count > prefix.utf8.count + suffix.utf8.count else { return nil }
        let id = path.dropFirst(prefix.count).dropLast(suffix.count)
        return id.contains("/") ? nil : String(id)
    }
}

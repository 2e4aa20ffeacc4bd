/// The request methods APNs uses: POST for pushes and channel creation, GET to read or list channels,
/// DELETE to delete one.
public enum HTTPMethod: String, Sendable {
    case get = "GET"
    case post = "POST"
    case delete = "DELETE"
}

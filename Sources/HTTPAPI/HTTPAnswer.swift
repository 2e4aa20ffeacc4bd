/// A handler's answer: a response now, or later from any thread (a store write, a fan-out that must
/// be waited for) without holding up the server thread, which serves every other client meanwhile.
public enum HTTPAnswer: Sendable {
    case response(HTTPResponse)
    /// `start` runs on the server thread right away with the request's responder; the work it starts
    /// calls `responder.respond` once, from any thread.
    case deferred(_ start: @Sendable (HTTPResponder) -> Void)
}

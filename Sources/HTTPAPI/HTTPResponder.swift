import Synchronization

/// Answers one deferred request, from any thread. The response is queued and the server thread woken
/// (libevent objects are touched only there). Only the first response counts; a responder dropped
/// without answering answers 500 itself, so a forgotten request neither hangs its client nor leaks
/// libevent's request.
public final class HTTPResponder: Sendable {
    private let id: UInt64
    private let mailbox: DeferredMailbox
    private let answered = Atomic<Bool>(false)

    init(id: UInt64, mailbox: DeferredMailbox) {
        self.id = id
        self.mailbox = mailbox
    }

    deinit {
        if !answered.load(ordering: .acquiring) {
            mailbox.post(id, .error(status: 500, code: "no_response", message: "the handler dropped the request without answering"))
        }
    }

    /// Sends `response`; later calls do nothing. After the server stopped, nothing is sent (the
    /// connection is gone).
    public func respond(_ response: HTTPResponse) {
        guard !answered.exchange(true, ordering: .acquiringAndReleasing) else { return }
        mailbox.post(id, response)
    }
}

// HTTPAPI — HTTP/1.1 for the daemon's API on libevent's evhttp (issue 12); no routes, no business
// logic.
// - `HTTPRequest` / `HTTPResponse` as Sendable values; the JSON error shape is `HTTPResponse.error`.
// - `HTTPServer`: listeners bound with `Socket.listen` for typed errors, its event_base loop on its
//   own thread, `stop()` through an eventfd, `.deferred` answers from any thread via `HTTPResponder`.
//   evhttp's own refusals (400/413/501) are HTML, listed on `HTTPServer`.
// Every libevent pointer stays inside; return codes go through
// `LibEvent.check`/`count`/`require`/`mustSucceed`.

// HTTP2 — HTTP/2 over TLS, nothing about APNs.
// - `HTTP2Session`: sans I/O on nghttp2 (bytes in, events out, coalesced output); socket-free tests
//   drive a client and a server session against each other.
// - `TLSPump`: the read/flush loop both sides share.
// - `ClientConnection`: its life as one `Stage` enum carrying what each stage owns (resolving,
//   connecting, handshaking, open, draining, closed); one `StreamTable` whose slot index is the
//   handle a caller keys its request by; deadlines and liveness PINGs on timers; GOAWAY and
//   REFUSED_STREAM classified as provably unprocessed.
// - `ServerConnection` / `HTTP2Server`: the simulator's side, with fault injection.
// nghttp2 return codes go through `Nghttp2.check`.

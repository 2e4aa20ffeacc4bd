// FCM — the FCM HTTP v1 protocol as plain values, no I/O and no C (issue 23). The pool sends it
// (Sender's `PushProvider.fcm`) for events, `send --provider fcm` and `bench --provider fcm`.
// - `ServiceAccount`: Google's file read unchanged (unknown members accepted, as Google extends it);
//   its assertion header and claims as bytes; `HTTPSEndpoint` for `token_uri`.
// - `OAuthTokenRequest` / `OAuthTokenResponse` / `AccessToken`: the exchange (`FormEncoding`).
// - `FCMMessageTemplate`: a group's body as a constant prefix + token + suffix, checked once with
//   room for a 255-byte token.
// - `LiveUpdateData`: the data fields an app reads (README, "Android (FCM) — data fields an app reads").
// - `FCMDuration`, `FCMDataKey`, `FCMPayloadLimit`, `FCMErrorBody`, `FCMResponse` and its one
//   `FCMResponseAction`.

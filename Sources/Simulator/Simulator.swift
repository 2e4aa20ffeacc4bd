// Simulator — `sokuho simulator`: the APNs look-alike (device push, broadcast, channel management,
// APNs' checks and reasons, fault injection, `--log`).
// - Strict is its only mode: where Apple documents a rule it enforces it exactly (lower-case push
//   types, `apns-priority` on broadcasts, `LiveActivity` on channel create, UUID `apns-request-id`,
//   403 `TopicMismatch` for another app's broadcast); where Apple's answer is unconfirmed it takes the
//   stricter one (tokens under 32 bytes refused). Each rule cites its source in RequestRules.swift
//   and has a test in StrictSimulatorTests.
// - It plays FCM HTTP v1 on the same port, told apart by path (`FCMSimulatorHandler`): `POST /token`
//   checks the RS256 assertion of the service account it writes into its cert dir as
//   `fcm-service-account-PORT.json` (`FCMTokenRules`); sends are checked by `FCMMessageRules`, a
//   per-project sliding-window quota (`FCMQuotaWindow`) and Google's error bodies (`FCMRefusal`);
//   `--fcm-*` options.

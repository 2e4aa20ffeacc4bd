// JSONCore — JSON without Foundation: a strict parser and an ordered writer (payloads are embedded
// byte for byte), and the one strict object reader, `JSONObjectFields`: a repeated or unknown member
// is refused by its path. Events, API bodies and the configuration file all read through it, each
// in its own error type.

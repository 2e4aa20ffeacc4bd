// APNs — the APNs protocol as plain values, no I/O: push types and topics, priorities, IDs, device
// push / broadcast / channel-management requests, Live Activity payloads (builder + validator),
// size limits, responses and the one action each maps to (`ResponseAction`).

/// Where a body is going, which decides its size limit (APNS.md §7).
public enum PayloadDestination: Sendable, Hashable {
    /// `POST /3/device/<token>` with this push type.
    case device(PushType)
    /// `POST /4/broadcasts/apps/<bundle>` (always a Live Activity).
    case broadcast

    public var pushType: PushType {
        switch self {
        case .device(let type): type
        case .broadcast: .liveactivity
        }
    }

    /// The largest body APNs accepts here: 4096 bytes on `/3/device` (5120 for VoIP), 5120 on
    /// broadcast. Larger ones get 413 `PayloadTooLarge`, so they are refused before sending.
    public var maximumBytes: Int {
        switch self {
        case .device(.voip), .broadcast: 5120
        case .device: 4096
        }
    }

    var name: String {
        switch self {
        case .device(.voip): "/3/device for VoIP"
        case .device: "/3/device"
        case .broadcast: "broadcast"
        }
    }

    /// Throws if a body of `size` bytes is empty or over this destination's limit; the message names both numbers.
    public func checkSize(_ size: Int) throws(ValidationError) {
        guard size > 0 else {
            throw ValidationError(field: "payload", "is empty; APNs needs a JSON body", reason: .payloadEmpty)
        }
        guard size <= maximumBytes else {
            throw ValidationError(field: "payload",
                                  "is \(size) bytes; APNs accepts at most \(maximumBytes) bytes on \(name), so shorten it by \(size - maximumBytes) bytes",
                                  reason: .payloadTooLarge)
        }
    }
}

/// The `apns-push-type` header. Each type goes to a topic made of the bundle ID and a type-specific
/// suffix (APNS.md §3); a push whose topic does not fit its type is refused by APNs
/// (`DeviceTokenNotForTopic` for a Live Activity sent to the bare bundle ID is the classic).
public enum PushType: String, Sendable, CaseIterable {
    case alert, background, liveactivity, voip, complication, fileprovider, location, mdm, pushtotalk, widgets, controls

    /// Parses a push type a person typed (`sokuho send --push-type Alert`), ignoring case; what is
    /// sent is always `headerValue`, in lower case. A received header is matched exactly instead
    /// (`Notification(receivedHeaders:)`): APNs documents lower-case values (APNS.md §3).
    public init(headerValue: String) throws(ValidationError) {
        guard let type = PushType(rawValue: headerValue.lowercased()) else {
            throw ValidationError(field: HeaderName.pushType,
                                  "'\(HeaderValueText.printable(headerValue))' is not a push type; use one of \(PushType.allCases.map(\.rawValue).joined(separator: ", "))",
                                  reason: .invalidPushType)
        }
        self = type
    }

    public var headerValue: String { rawValue }

    /// What `apns-topic` adds to the bundle ID for this type: empty for alert and background, and for
    /// mdm, whose topic comes from the MDM certificate and is used as given.
    public var topicSuffix: String {
        switch self {
        case .alert, .background, .mdm: ""
        case .liveactivity: ".push-type.liveactivity"
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .location: ".location-query"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// The `apns-topic` for a push of this type to the app `bundle` (for mdm, `bundle` is the MDM topic).
    public func topic(forBundle bundle: BundleID) -> String { bundle.text + topicSuffix }

    /// Splits a topic into the bundle ID and the push type its suffix implies. A bare bundle ID
    /// implies no type (it fits alert, background and mdm).
    public static func split(topic: String) -> (bundle: Substring, impliedType: PushType?) {
        for type in PushType.suffixedTypes where topic.hasSuffix(type.topicSuffix) && topic.utf8.count > type.topicSuffix.utf8.count {
            return (topic.dropLast(type.topicSuffix.count), type)
        }
        return (topic[...], nil)
    }

    /// Types with a suffix, longest suffix first so a longer suffix always wins.
    private static let suffixedTypes = PushType.allCases.filter { !$0.topicSuffix.isEmpty }
        .sorted { $0.topicSuffix.utf8.count > $1.topicSuffix.utf8.count }

    /// Throws unless a push of this type may go to `topic`: the topic must carry exactly this type's
    /// suffix (none for alert and background); mdm takes any topic.
    public func check(topic: String) throws(ValidationError) {
        try HeaderValueText.check(topic, field: HeaderName.topic, allowed: { $0 > 0x20 && $0 < 0x7f },
                                  expected: "the bundle ID with the push type's suffix", reason: .badTopic)
        if self == .mdm { return }
        let (bundle, implied) = PushType.split(topic: topic)
        guard implied != (topicSuffix.isEmpty ? nil : self) else { return }
        let wanted = String(bundle) + topicSuffix
        let why = implied.map { "it carries the \($0.rawValue) suffix '\($0.topicSuffix)'" } ?? "it has no push-type suffix"
        throw ValidationError(field: HeaderName.topic,
                              "'\(topic)' does not fit push type \(rawValue): \(why); use '\(wanted)'",
                              reason: .deviceTokenNotForTopic)
    }

    /// Whether the payload must be an `{"aps":{…}}` dictionary. PushKit types (voip, complication,
    /// fileprovider, pushtotalk) and mdm carry the app's or the OS's own JSON instead.
    public var requiresAPSDictionary: Bool {
        switch self {
        case .alert, .background, .liveactivity, .location, .widgets, .controls: true
        case .voip, .complication, .fileprovider, .pushtotalk, .mdm: false
        }
    }
}

/// A topic an installation follows ("region:301", "train:123D"), with the lowest event level it
/// wants (an earthquake app: only intensity 3 and above). Level 0 means every event.
public struct TopicSubscription: Sendable, Equatable, Hashable {
    public let name: String
    public let minLevel: UInt8

    public init(name: String, minLevel: UInt8 = 0) {
        self.name = name
        self.minLevel = minLevel
    }
}

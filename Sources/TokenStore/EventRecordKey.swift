/// The keys of the `events` database (see `EventSerialRecord` for the layout of each kind).
enum EventRecordKey {
    static func prefix(eventKey: String) -> [UInt8] { Array(eventKey.utf8) + [0] }

    static func serial(eventKey: String, serial: UInt32) -> [UInt8] {
        prefix(eventKey: eventKey) + [UInt8(ascii: "s")] + bigEndian(serial)
    }

    /// Event key NUL "u" serial: every segment of one serial's update answers (`UpdateAnswers`).
    static func updateAnswers(eventKey: String, serial: UInt32) -> [UInt8] {
        prefix(eventKey: eventKey) + [UInt8(ascii: "u")] + bigEndian(serial)
    }

    static func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    static func topic(eventKey: String, topic: String) -> [UInt8] {
        prefix(eventKey: eventKey) + [UInt8(ascii: "t")] + Array(topic.utf8)
    }

    /// Event key NUL "a" topic NUL: every answer segment of one start record (topics hold no NUL).
    static func answerSegments(eventKey: String, topic: String) -> [UInt8] {
        prefix(eventKey: eventKey) + [UInt8(ascii: "a")] + Array(topic.utf8) + [0]
    }

    /// … then the segment number, big-endian so segments sort in number order.
    static func answerSegment(eventKey: String, topic: String, number: UInt32) -> [UInt8] {
        answerSegments(eventKey: eventKey, topic: topic) + bigEndian(number)
    }
}

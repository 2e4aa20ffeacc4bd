/// How a start checkpoint's answered hashes are written: as numbered segments, so that a
/// checkpoint writes only the answers since the previous one instead of the whole in-flight window
/// again (up to `connections × streams + B` hashes before every chunk: 44 B per push to a cluster's
/// Redis, issue 22). Now and then the writer folds everything still needed into one segment and
/// drops the ones before it, so what is kept stays about the size of the window.
///
/// Writing a `StartProgress` with a log: its `answered` is segment `segment`, stored apart from
/// the rest of the record, and segments numbered below `firstKept` are dropped (`segment ==
/// firstKept`: this one holds every answer still needed). Without one: `answered` is the whole
/// set, kept in the record itself, and every segment is dropped (final records, old writers).
/// Reading one back (the store, a cluster's Redis copy) gives the whole set — the record's own and
/// every kept segment's — and a log naming the highest segment and the lowest kept, so a run that
/// resumes numbers on from there.
public struct AnswerLog: Sendable, Equatable {
    public var segment: UInt32
    public var firstKept: UInt32

    public init(segment: UInt32, firstKept: UInt32) {
        self.segment = segment
        self.firstKept = firstKept
    }

    /// A segment's hashes as stored: a count, then the hashes (8 bytes each, big-endian).
    public static func encode(_ hashes: [UInt64]) -> [UInt8] {
        var writer = RecordWriter(capacity: 5 + hashes.count * 8)
        writer.length(hashes.count)
        for hash in hashes { writer.uint64(hash) }
        return writer.bytes
    }

    /// What `encode` wrote; `what` names the segment in the error.
    public static func decode(_ bytes: [UInt8], what: String) throws(StoreError) -> [UInt64] {
        let decoded = bytes.withUnsafeBytes { raw in Result { () throws(StoreError) in try decode(raw, what: what) } }
        return try decoded.get()
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, what: String) throws(StoreError) -> [UInt64] {
        var reader = RecordReader(bytes, what: what)
        let count = try reader.length()
        var hashes: [UInt64] = []
        hashes.reserveCapacity(count)
        for _ in 0..<count { hashes.append(try reader.uint64()) }
        guard reader.isAtEnd else { throw StoreError.corrupt(path: "", detail: "\(what) has trailing bytes") }
        return hashes
    }
}

extension StartProgress {
    /// This record with `segments` (number, hashes) read beside it merged in: the whole answered
    /// set, and the log to number on from (unchanged when there are none).
    public func merging(segments: [(number: UInt32, hashes: [UInt64])]) -> StartProgress {
        guard let highest = segments.map(\.number).max(), let lowest = segments.map(\.number).min() else { return self }
        var merged = self
        var seen = Set(answered)
        for segment in segments.sorted(by: { $0.number < $1.number }) {
            for hash in segment.hashes where seen.insert(hash).inserted { merged.answered.append(hash) }
        }
        merged.answerLog = AnswerLog(segment: highest, firstKept: lowest)
        return merged
    }

    /// The record as one segment holding the whole set, numbered where its log ended (or as a
    /// plain record without one): what a copy into another store writes, so the run that resumes
    /// from it numbers on without clashing with segments a cluster's Redis still has.
    public var foldedIntoOneSegment: StartProgress {
        var folded = self
        if let log = answerLog { folded.answerLog = AnswerLog(segment: log.segment, firstKept: log.segment) }
        return folded
    }
}

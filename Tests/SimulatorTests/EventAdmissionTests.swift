import Fanout
import Testing
import TokenStore

/// `EventAdmission` as the pure function it is: a serial and body hash against the key's stored
/// serial records, no store and no clock. (How the CLI and the daemon word each decision is
/// tested end to end in `FanoutTests` and `ServeTests`.)
@Suite struct EventAdmissionTests {
    static let body: [UInt8] = Array(repeating: 1, count: 32)
    static let otherBody: [UInt8] = Array(repeating: 2, count: 32)

    static func stored(_ serial: UInt32, _ phase: EventSerialRecord.Phase, body: [UInt8] = body, report: [UInt8] = []) -> EventSerialRecord {
        EventSerialRecord(eventKey: "eew-1", serial: serial, bodyHash: body, phase: phase, startedAt: 1_000, updatedAt: 2_000, report: report)
    }

    func decision(_ serial: UInt32, body: [UInt8] = body, given stored: [EventSerialRecord]) -> EventAdmission.Decision {
        EventAdmission(serial: serial, bodyHash: body).decision(given: stored)
    }

    @Test("A key with no records admits any serial as new")
    func anUnknownKeyIsNew() {
        #expect(decision(1, given: []) == .new)
        #expect(decision(7, given: []) == .new)
    }

    @Test("A serial above every stored one is new")
    func aHigherSerialIsNew() {
        #expect(decision(3, given: [Self.stored(1, .done), Self.stored(2, .sending)]) == .new)
    }

    @Test("A serial below one already accepted is superseded, naming the highest such serial")
    func anOlderSerialIsSuperseded() {
        let records = [Self.stored(1, .done), Self.stored(2, .done), Self.stored(4, .sending)]
        #expect(decision(1, given: records) == .superseded(by: 4))
        #expect(decision(3, given: records) == .superseded(by: 4))
    }

    @Test("Superseded wins over the same serial's own record, even with the same body")
    func supersededBeforeSameSerial() {
        #expect(decision(1, given: [Self.stored(1, .done), Self.stored(2, .sending)]) == .superseded(by: 2))
    }

    @Test("The same serial with another body is a conflict, whatever its phase")
    func anotherBodyIsAConflict() {
        for phase in [EventSerialRecord.Phase.sending, .done, .stopped] {
            #expect(decision(2, body: Self.otherBody, given: [Self.stored(1, .done), Self.stored(2, phase)]) == .conflict)
        }
    }

    @Test("The same serial and body that ran to the end is already sent, with its record")
    func aDoneSerialIsAlreadySent() {
        let record = Self.stored(2, .done, report: Array("{}".utf8))
        #expect(decision(2, given: [Self.stored(1, .done), record]) == .alreadySent(record))
    }

    @Test("The same serial and body that is sending or stopped resumes from its record")
    func anUnfinishedSerialResumes() {
        for phase in [EventSerialRecord.Phase.sending, .stopped] {
            let record = Self.stored(2, phase)
            #expect(decision(2, given: [Self.stored(1, .done), record]) == .resume(record))
        }
    }
}

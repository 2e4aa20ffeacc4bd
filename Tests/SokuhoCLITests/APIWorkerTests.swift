import Glibc
import HTTPAPI
import IO
import Synchronization
import Vocabulary
@testable import Daemon
import Testing

/// The API's workers behind a real `HTTPServer`: a full queue is refused at once (503 `busy`),
/// never waited for on the HTTP thread, and what was queued still runs.
@Suite struct APIWorkerTests {
    /// One HTTP/1.1 exchange on a fresh connection (`Connection: close`): the whole answer as text.
    static func get(port: Int) -> String {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return "socket failed" }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { return "connect failed" }
        let request = Array("GET /work HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
        var answer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            answer += chunk[..<count]
        }
        return String(decoding: answer, as: UTF8.self)
    }

    /// Polls `condition` every millisecond for up to 10 s (a deadline, not a sleep to wait out).
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = MonotonicInstant.now() + .seconds(10)
        while MonotonicInstant.now() < deadline {
            if condition() { return true }
            usleep(1_000)
        }
        return condition()
    }

    @Test func aFullQueueIsAnswered503BusyAtOnceWhileTheQueuedRequestStillGetsItsAnswer() throws {
        let worker = APIWorker(name: "test-api", threads: 1, capacity: 1)
        let gate = ConditionLock()
        let open = Lock(false)
        let started = Atomic<Int>(0)
        let server = try HTTPServer(listen: [("127.0.0.1", 0)], answering: { _ in
            worker.answer {
                started.add(1, ordering: .relaxed)
                gate.withLock { while !open.withLock({ $0 }) { gate.wait(until: MonotonicInstant.now() + .seconds(1)) } }
                return .response(.text("done"))
            }
        })
        server.start()
        let port = server.ports[0]
        let answers = Lock<[Int: String]>([:])
        func request(_ number: Int) -> OSThread {
            OSThread.start(name: "test-client-\(number)") { let text = Self.get(port: port); answers.withLock { $0[number] = text } }
        }

        // One request runs (held at the gate), then two more: one fits the queue, one does not.
        let first = request(1)
        #expect(Self.eventually { started.load(ordering: .relaxed) == 1 })
        let others = [request(2), request(3)]
        #expect(Self.eventually { answers.withLock { $0.count } == 1 }, "the request beyond the queue was not answered while the worker was busy")
        let refused = answers.withLock { $0.values.first } ?? ""
        #expect(refused.hasPrefix("HTTP/1.1 503"), "\(refused)")
        #expect(refused.contains(#""code":"busy""#) && refused.contains("Retry-After: 1"), "\(refused)")
        #expect(started.load(ordering: .relaxed) == 1)

        gate.withLock { open.withLock { $0 = true }; gate.broadcast() }
        for thread in [first] + others { thread.join() }
        let served = answers.withLock { $0.values.filter { $0.hasPrefix("HTTP/1.1 200") && $0.hasSuffix("done") } }
        #expect(served.count == 2, "\(answers.withLock { $0 })")
        server.stop()
        worker.stop()
    }
}

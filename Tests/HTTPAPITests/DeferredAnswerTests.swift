#if canImport(Glibc)
import Glibc
#endif
import HTTPAPI
import Vocabulary
import Testing

/// `.deferred`: a handler answers later from another thread while the server keeps serving.
@Suite struct DeferredAnswerTests {
    @Test func aDeferredAnswerFromAnotherThreadReachesTheClientWhileOthersAreServed() throws {
        let held = Lock<[HTTPResponder]>([])
        try withServer(answering: { request in
            guard request.path == "/slow" else { return .response(.text("fast")) }
            return .deferred { responder in held.withLock { $0.append(responder) } }
        }) { server in
            let base = "http://127.0.0.1:\(server.ports[0])"
            let slow = Lock<Curl.Result?>(nil)
            let thread = spawn { slow.withLock { $0 = Curl.run([base + "/slow"]) } }
            for _ in 0..<500 where held.withLock({ $0.isEmpty }) { usleep(10_000) }
            // The slow request is waiting; the server thread is free for others.
            #expect(Curl.run([base + "/fast"]).out == "fast")
            let responder = try #require(held.withLock { $0.first })
            let answering = spawn { responder.respond(.json(status: 201, Array(#"{"done":true}"#.utf8))) }
            join(answering)
            responder.respond(.text("second answer is ignored"))
            join(thread)
            #expect(slow.withLock { $0?.out } == #"{"done":true}"#)
        }
    }

    @Test func aResponderDroppedWithoutAnsweringAnswers500InJSON() throws {
        try withServer(answering: { _ in .deferred { _ in } }) { server in
            let run = Curl.run(["-w", " %{http_code}", "http://127.0.0.1:\(server.ports[0])/forgotten"])
            #expect(run.out == #"{"error":{"code":"no_response","message":"the handler dropped the request without answering"}} 500"#, "\(run.err)")
        }
    }

    @Test func stopWithADeferredRequestOutstandingClosesItsConnectionAndALateAnswerIsDropped() throws {
        let held = Lock<HTTPResponder?>(nil)
        let server = try HTTPServer(listen: [("127.0.0.1", 0)], answering: { _ in .deferred { responder in held.withLock { $0 = responder } } })
        server.start()
        let client = RawClient(port: server.ports[0])
        client.send("GET /wait HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in 0..<500 where held.withLock({ $0 == nil }) { usleep(10_000) }
        let took = elapsed { server.stop() }
        #expect(took < .seconds(2), "stop took \(took)")
        #expect(client.readUntilClosed(seconds: 2) == "" && client.closed)
        held.withLock { $0?.respond(.text("too late")) }  // must not touch the freed request
    }
}

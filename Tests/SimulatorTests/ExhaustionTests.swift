#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import Testing

/// Running out of descriptors degrades and shows, never stops the daemon (issue 21): before, a
/// daemon at its limit died at the next channel call, and libevent's listener spun on EMFILE.
@Suite struct ExhaustionTests {
    /// Opens `count` connections to the API and holds them without a request, then reads what each
    /// got and how much CPU the daemon used meanwhile: "held=N refused503=N other=N cpu=S".
    static let holder = """
        import os, socket, sys, time
        port, count, pid = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
        def cpu():
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
        time.sleep(0.5)
        before = cpu(); time.sleep(1.0); after = cpu()
        answers = []
        for s in held:
            s.setblocking(False)
            try: answers.append(s.recv(4096))
            except BlockingIOError: answers.append(None)
        busy = [a for a in answers if a and a.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in a and b"out_of_descriptors" in a]
        print(f"held={answers.count(None)} refused503={len(busy)} other={len(answers) - answers.count(None) - len(busy)} cpu={after - before:.2f}")
        for s in held: s.close()
        """

    /// A daemon whose descriptor limit is its idle count + 16, under a burst of 40 connections:
    /// it takes what fits, answers the rest 503 with Retry-After at once, does not spin, counts
    /// them on /metrics and serves normally once they are gone.
    @Test func aDaemonOutOfDescriptorsAnswers503AndStaysAlive() throws {
        let scenario = try FanoutScenario()
        let daemon = try ServeTests.Daemon(scenario)
        defer { _ = daemon.stop() }
        #expect(daemon.curl("GET", "/healthz", admin: false).status == 200)
        let idle = ChannelConnectionTests.usage(of: daemon.child.pid).fds
        let limit = ChildProcess.run("prlimit", ["--pid", String(daemon.child.pid), "--nofile=\(idle + 16):\(idle + 16)"])
        #expect(limit.err.isEmpty, "\(limit.err)")

        let run = ChildProcess.run("python3", ["-c", Self.holder, String(daemon.port), "40", String(daemon.child.pid)])
        let fields = Dictionary(uniqueKeysWithValues: run.out.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { field -> (String, Double)? in
            let parts = field.split(separator: "=")
            guard parts.count == 2, let value = Double(parts[1]) else { return nil }
            return (String(parts[0]), value)
        })
        let held = try #require(fields["held"], "\(run.out) \(run.err)"), refused = try #require(fields["refused503"])
        #expect(held >= 8 && held <= 20, "connections taken: \(run.out)")
        #expect(refused >= 20 && held + refused == 40 && fields["other"] == 0, "every connection past the limit answered 503: \(run.out)")
        // A spinning accept loop burns the whole second; answering and waiting costs next to nothing.
        #expect((fields["cpu"] ?? 1) < 0.3, "daemon CPU while at the limit: \(run.out)")

        #expect(kill(daemon.child.pid, 0) == 0, "the daemon is alive")
        #expect(daemon.curl("GET", "/healthz", admin: false).status == 200)
        #expect(daemon.metric("sokuho_api_refused_no_descriptor_total") ?? 0 >= Int(refused))
    }
}

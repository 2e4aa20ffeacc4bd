#if canImport(Glibc)
import Glibc
#endif
import JSONCore
import Testing

/// Running out of descriptors degrades and shows, never stops the daemon (issue 21): before, a
/// daemon at its limit died at the next channel call, and libevent's listener spun on EMFILE.
@Suite struct ExhaustionTests {
    /// Opens `count` connections to the API and holds them without a request, then reads what each
    /// got, how much CPU the daemon used meanwhile, how many of the held ones the daemon has
    /// accepted (its descriptors that are sockets of these connections, found by inode in
    /// /proc/net/tcp: a connection still waiting in the backlog has none) and how many descriptor
    /// numbers below its limit are free (the limit bounds the numbers, not the count: a daemon
    /// may hold a descriptor above a limit lowered after it opened it, and have gaps below):
    /// "held=N refused503=N other=N cpu=S taken=N free=N".
    static let holder = """
        import os, socket, sys, time
        port, count, pid, limit = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
        def cpu():
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        def descriptors():
            links = {}
            for name in os.listdir(f"/proc/{pid}/fd"):
                try: links[int(name)] = os.readlink(f"/proc/{pid}/fd/{name}")
                except OSError: pass
            return links
        def taken(ports, links):
            inodes = {link[len("socket:["):-1] for link in links.values() if link.startswith("socket:[")}
            rows = [line.split() for line in open("/proc/net/tcp").read().splitlines()[1:]]
            return sum(1 for row in rows if int(row[1].split(":")[1], 16) == port
                       and int(row[2].split(":")[1], 16) in ports and row[9] in inodes)
        held = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(count)]
        ports = {s.getsockname()[1] for s in held}
        time.sleep(0.5)
        before = cpu(); time.sleep(1.0); after = cpu()
        links = descriptors()
        answers = []
        for s in held:
            s.setblocking(False)
            try: answers.append(s.recv(4096))
            except BlockingIOError: answers.append(None)
        busy = [a for a in answers if a and a.startswith(b"HTTP/1.1 503") and b"Retry-After: 1" in a and b"out_of_descriptors" in a]
        print(f"held={answers.count(None)} refused503={len(busy)} other={len(answers) - answers.count(None) - len(busy)} cpu={after - before:.2f} taken={taken(ports, links)} free={sum(1 for n in range(limit) if n not in links)}")
        for s in held: s.close()
        """

    /// A daemon whose descriptor limit is its idle count + 16 (about 16 to spare), under a burst of 40 connections:
    /// it takes what fits, answers the rest 503 with Retry-After at once, does not spin, counts
    /// them on /metrics and serves normally once they are gone. What fits is not assumed: the
    /// daemon may open descriptors of its own meanwhile (a pool or channel connection still
    /// opening when the idle count was read), so the test reads the daemon's table instead.
    @Test func aDaemonOutOfDescriptorsAnswers503AndStaysAlive() throws {
        let scenario = try FanoutScenario()
        let daemon = try ServeTests.Daemon(scenario)
        defer { _ = daemon.stop() }
        #expect(daemon.curl("GET", "/healthz", admin: false).status == 200)
        let idle = ChannelConnectionTests.usage(of: daemon.child.pid).fds
        let limit = ChildProcess.run("prlimit", ["--pid", String(daemon.child.pid), "--nofile=\(idle + 16):\(idle + 16)"])
        #expect(limit.err.isEmpty, "\(limit.err)")

        let run = ChildProcess.run("python3", ["-c", Self.holder, String(daemon.port), "40", String(daemon.child.pid), String(idle + 16)])
        let fields = Dictionary(uniqueKeysWithValues: run.out.split(whereSeparator: { $0 == " " || $0 == "\n" }).compactMap { field -> (String, Double)? in
            let parts = field.split(separator: "=")
            guard parts.count == 2, let value = Double(parts[1]) else { return nil }
            return (String(parts[0]), value)
        })
        let held = try #require(fields["held"], "\(run.out) \(run.err)"), refused = try #require(fields["refused503"])
        // Every connection is either taken or answered 503 at once; none waits in the backlog
        // unanswered, and none gets anything else.
        #expect(fields["taken"] == held, "every unanswered connection is one the daemon holds: \(run.out)")
        #expect(held + refused == 40 && fields["other"] == 0, "every connection past the limit answered 503: \(run.out)")
        // It took what fit: while refusing, no number below its limit was free (the held
        // connections, the reserve and its own), and it took some and refused some of the burst.
        #expect(fields["free"] == 0, "descriptor numbers below the limit of \(idle + 16) left free: \(run.out)")
        #expect(held > 0 && refused > 0, "\(run.out)")
        // A spinning accept loop burns the whole second; answering and waiting costs next to nothing.
        #expect((fields["cpu"] ?? 1) < 0.3, "daemon CPU while at the limit: \(run.out)")

        #expect(kill(daemon.child.pid, 0) == 0, "the daemon is alive")
        #expect(daemon.curl("GET", "/healthz", admin: false).status == 200)
        #expect(daemon.metric("sokuho_api_refused_no_descriptor_total") ?? 0 >= Int(refused))
    }
}

#if canImport(Glibc)
import Glibc
#endif

/// Runs a shell command line, returning its exit status (tests use the system's openssl as an
/// independent peer).
@discardableResult
func shell(_ command: String) -> Int32 {
    var pid: pid_t = 0
    let args = ["/bin/sh", "-c", command]
    var argv: [UnsafeMutablePointer<CChar>?] = args.map { strdup($0) } + [nil]
    defer { for p in argv { free(p) } }
    guard posix_spawn(&pid, "/bin/sh", nil, nil, &argv, environ) == 0 else { return -1 }
    var status: Int32 = 0
    waitpid(pid, &status, 0)
    return (status >> 8) & 0xff
}

/// A fresh temporary directory.
func temporaryDirectory(_ prefix: String = "sokuho-test") -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

/// A CA and a server certificate for localhost/127.0.0.1/::1 made with the openssl CLI.
/// mbedTLS 2.28 matches names only against dNSName entries, so the IP literals are there too.
func makeTestCertificates() -> (dir: String, ca: String, cert: String, key: String) {
    let dir = temporaryDirectory("sokuho-certs")
    let script = """
    cd \(dir) && \
    openssl ecparam -name prime256v1 -genkey -noout -out ca.key 2>/dev/null && \
    openssl req -x509 -new -key ca.key -subj /CN=test-ca -days 2 -out ca.pem 2>/dev/null && \
    openssl ecparam -name prime256v1 -genkey -noout -out server.key 2>/dev/null && \
    openssl req -new -key server.key -subj /CN=localhost -out server.csr 2>/dev/null && \
    printf 'subjectAltName=DNS:localhost,DNS:127.0.0.1,DNS:::1,IP:127.0.0.1,IP:::1\\n' > ext && \
    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 -extfile ext -out server.pem 2>/dev/null
    """
    precondition(shell(script) == 0, "openssl could not make test certificates")
    return (dir, dir + "/ca.pem", dir + "/server.pem", dir + "/server.key")
}

/// Waits up to `seconds` for `condition`.
func waitUntil(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
    let end = Double(MonotonicClockForTests.now()) + seconds * 1e9
    while Double(MonotonicClockForTests.now()) < end {
        if condition() { return true }
        usleep(2000)
    }
    return condition()
}

enum MonotonicClockForTests {
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Crypto
import HTTP2
import HTTP2TestSupport
import JSONCore
import Simulator
import SokuhoCLI
import Vocabulary

/// A fresh private temporary directory for one test (tests run in parallel).
func temporaryDirectory(_ prefix: String = "sokuho-simtest") -> String {
    var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
    return template.withUnsafeMutableBufferPointer { String(cString: mkdtemp($0.baseAddress!)!) }
}

/// Writes `text` to a new file in `directory` and returns its path.
func writeFile(_ directory: String, _ name: String, _ text: String) -> String {
    writeFile(directory, name, Array(text.utf8))
}

func writeFile(_ directory: String, _ name: String, _ bytes: [UInt8]) -> String {
    let path = directory + "/" + name
    let file = fopen(path, "w")!
    _ = bytes.withUnsafeBufferPointer { fwrite($0.baseAddress, 1, $0.count, file) }
    fclose(file)
    return path
}

func readFile(_ path: String) -> [UInt8] {
    guard let file = fopen(path, "r") else { return [] }
    defer { fclose(file) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let n = chunk.withUnsafeMutableBufferPointer { fread($0.baseAddress, 1, $0.count, file) }
        if n == 0 { return bytes }
        bytes.append(contentsOf: chunk[0..<n])
    }
}

/// The simulator's CA, server certificate and test provider key, generated once for the suite.
let sharedCertificates: SimulatorCertificates = {
    do { return try SimulatorCertificates.prepare(directory: temporaryDirectory("sokuho-simcerts")) } catch {
        preconditionFailure("cannot prepare simulator certificates: \(error)")
    }
}()

/// The bundle every test pushes to.
let testBundle = "com.example.eew"

/// What one in-process `sokuho` run printed and returned.
struct CLIRun: CustomStringConvertible {
    let code: ExitCode
    let out: String
    let err: String
    var line: String { out.split(separator: "\n").first.map(String.init) ?? "" }
    var description: String { "exit \(code.rawValue)\nstdout: \(out)\nstderr: \(err)" }
}

/// Runs the CLI in-process, as the `sokuho` binary would, with `environment` (empty by default, so
/// the tester's own SOKUHO_* variables never leak in).
func sokuho(_ arguments: [String], environment: [String: String] = [:]) -> CLIRun {
    let captured = CapturedConsole()
    let code = Sokuho.run(arguments, environment: environment, console: captured.console)
    return CLIRun(code: code, out: captured.out, err: captured.err)
}

/// An `APNsSimulator` on loopback ports chosen by the system, trusting the shared test key.
final class RunningSimulator {
    let simulator: APNsSimulator
    var certificates: SimulatorCertificates { sharedCertificates }

    init(_ configure: (inout SimulatorConfiguration) -> Void = { _ in }) throws {
        var configuration = SimulatorConfiguration()
        configuration.trustedKeys = [try sharedCertificates.trustedTestKey()]
        configure(&configuration)
        simulator = try APNsSimulator(configuration: configuration, certificates: sharedCertificates)
    }

    var port: Int { simulator.port }
    var managePort: Int { simulator.managePort }
    var counters: SimulatorCounters { simulator.counters }

    /// Credentials and endpoint options for the CLI, as the simulator's start line suggests.
    func connectionOptions(topic: String = testBundle, key: String? = nil, teamID: String = SimulatorCertificates.teamID,
                           keyID: String = SimulatorCertificates.keyID, caFile: String? = nil) -> [String] {
        ["--host", "127.0.0.1:\(port)", "--manage-host", "127.0.0.1:\(managePort)",
         "--ca-file", caFile ?? certificates.ca, "--key", key ?? certificates.providerKey,
         "--team-id", teamID, "--key-id", keyID, "--topic", topic]
    }

    /// `sokuho <arguments> <connection options>`.
    func run(_ arguments: [String]) -> CLIRun { sokuho(arguments + connectionOptions()) }

    /// `bearer <jwt>` of the shared test key, issued now.
    func authorization() throws -> String {
        try Self.authorization(keyPath: certificates.providerKey, keyID: SimulatorCertificates.keyID,
                               teamID: SimulatorCertificates.teamID, issuedAt: WallClock.seconds())
    }

    static func authorization(keyPath: String, keyID: String, teamID: String, issuedAt: Int64) throws -> String {
        let signer = try ProviderTokenSigner(key: try SigningKey(contentsOf: keyPath), keyID: keyID, teamID: teamID)
        return "bearer " + (try signer.token(issuedAt: issuedAt))
    }

    /// Sends raw requests through `OneShotClient`, trusting the simulator's CA, to the push port
    /// (or with `management`, to the channel-management port).
    func perform(_ requests: [ClientRequest], management: Bool = false) throws -> [ClientResult] {
        let options = ClientConnectionOptions(host: "127.0.0.1", port: management ? managePort : port,
                                              tls: try TLSConfiguration.client(caFile: certificates.ca))
        return try OneShotClient.perform(requests, options: options, authorization: try authorization(),
                                         timeout: .seconds(10), streamsUntilFirstSuccess: 1).get()  // APNs' rule, as the simulator enforces it
    }

}

/// Runs `body` against a fresh simulator and stops it afterwards (also when `body` throws).
func withSimulator<T>(_ configure: (inout SimulatorConfiguration) -> Void = { _ in },
                      _ body: (RunningSimulator) throws -> T) throws -> T {
    let running = try RunningSimulator(configure)
    defer { running.simulator.stop() }
    return try body(running)
}

/// A device token (64 hex digits) made of one repeated byte, distinct per test.
func deviceToken(_ byte: String) -> String { String(repeating: byte, count: 32) }

/// Headers of a Live Activity push to a device, as `sokuho send` would build them.
func liveActivityHeaders(topic: String = testBundle) -> [(name: String, value: String)] {
    [("apns-push-type", "liveactivity"), ("apns-topic", topic + ".push-type.liveactivity"), ("apns-priority", "10")]
}

/// A small valid Live Activity update body.
func updateBody(timestamp: Int64 = WallClock.seconds()) -> [UInt8] {
    Array(#"{"aps":{"timestamp":\#(timestamp),"event":"update","content-state":{"intensity":5}}}"#.utf8)
}

extension ClientResult {
    var status: Int? { if case let .response(status, _, _) = self { return status } else { return nil } }
    var failure: StreamFailure? { if case let .failed(failure) = self { return failure } else { return nil } }
    func header(_ name: String) -> String? {
        if case let .response(_, headers, _) = self { return headers.first { $0.name == name }?.value }
        return nil
    }
    /// The `reason` of an APNs error body.
    var reason: String? {
        guard case let .response(_, _, body) = self, let json = try? JSONParser.parse(body) else { return nil }
        return json["reason"]?.stringValue
    }
}

/// `text` as one URL path segment: every byte but the unreserved ones as %XX (a base64 channel id
/// holds `/`, `+` and `=`).
func pathSegment(_ text: String) -> String {
    var out = ""
    for byte in text.utf8 {
        if (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || "-._~".utf8.contains(byte) {
            out.append(Character(UnicodeScalar(byte)))
        } else {
            out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0x0f, radix: 16, uppercase: true)
        }
    }
    return out
}

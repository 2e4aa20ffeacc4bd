import Vocabulary
import Crypto
import HTTP2
import HTTPAPI
import JSONCore
import TokenStore

/// `sokuho version`: Sokuho's version and the versions the linked C libraries report at run time,
/// so an operator can tell which mbedTLS a static binary actually carries.
enum VersionCommand {
    static let spec = CommandSpec(
        "version",
        summary: "print the versions of Sokuho and of the linked mbedTLS, nghttp2, LMDB and libevent",
        options: [OptionSpec("--json", help: "print {\"sokuho\":…,\"mbedtls\":…,\"nghttp2\":…,\"lmdb\":…,\"libevent\":…}")],
        run: { invocation throws(CLIError) in
            let versions = [
                ("sokuho", SokuhoVersion.current),
                ("mbedtls", MbedTLSLibrary.version),
                ("nghttp2", Nghttp2Library.version),
                ("lmdb", LMDBLibrary.version),
                ("libevent", LibEventLibrary.version),
            ]
            if invocation.flag("--json") {
                var writer = JSONWriter()
                writer.beginObject()
                for (name, version) in versions { writer.key(name); writer.string(version) }
                writer.endObject()
                invocation.console.print(writer.string)
            } else {
                invocation.console.print("sokuho \(versions[0].1)")
                invocation.console.print("mbedTLS \(versions[1].1), nghttp2 \(versions[2].1), LMDB \(versions[3].1), libevent \(versions[4].1)")
            }
            return .success
        })
}

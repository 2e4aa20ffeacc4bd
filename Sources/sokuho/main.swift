#if canImport(Glibc)
import Glibc
#endif
import SokuhoCLI

// Flush nothing on SIGPIPE: a closed pipe (`sokuho … | head`) is an ordinary write error.
signal(SIGPIPE, SIG_IGN)

var environment: [String: String] = [:]
var cursor = environ
while let entry = cursor.pointee {
    let text = String(cString: entry)
    if let equals = text.firstIndex(of: "=") {
        environment[String(text[..<equals])] = String(text[text.index(after: equals)...])
    }
    cursor += 1
}
let code = Sokuho.run(Array(CommandLine.arguments.dropFirst()), environment: environment, console: .standard())
exit(code.rawValue)

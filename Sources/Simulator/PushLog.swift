#if canImport(Glibc)
import Glibc
#endif
import HTTP2
import JSONCore

/// `--log FILE`: one JSON line per accepted push — path, headers without `authorization`, and the
/// body embedded as it arrived. Line-buffered, so a reader sees each push as it is accepted.
final class PushLog: @unchecked Sendable {
    // @unchecked: every loop thread appends (SimulatorShared); each line is one fwrite, which holds
    // the FILE's own lock, so lines never interleave. `close` runs after the loops stopped.
    private let file: UnsafeMutablePointer<FILE>

    init(path: String) throws(SimulatorError) {
        guard let file = fopen(path, "a") else {
            throw .logFile(path, String(cString: strerror(errno)))
        }
        self.file = file
        setvbuf(file, nil, _IOLBF, 1 << 16)  // line-buffered: a reader of the log sees whole lines at once
    }

    func append(_ line: Substring) {
        var text = String(line)
        text.append("\n")
        _ = text.withUTF8 { fwrite($0.baseAddress, 1, $0.count, file) }
    }

    func close() { fclose(file) }

    static func line(for request: ServerRequest) -> String {
        var writer = JSONWriter(reservingCapacity: request.body.count + 256)
        writer.beginObject()
        writer.key("path"); writer.string(request.path)
        writer.key("headers"); writer.beginObject()
        for header in request.headers where header.name != "authorization" {
            writer.key(header.name); writer.string(header.value)
        }
        writer.endObject()
        writer.key("body")
        if (try? JSONParser.parse(request.body)) != nil { writer.raw(request.body) } else { writer.string(String(decoding: request.body, as: UTF8.self)) }
        writer.endObject()
        return writer.string
    }
}

/// Why the simulator could not start.
public enum SimulatorError: Error, Sendable, CustomStringConvertible {
    case logFile(String, String)
    case certificates(String)
    case listen(String)
    case key(String)

    public var description: String {
        switch self {
        case let .logFile(path, why): return "--log \(path): \(why)"
        case let .certificates(why): return "certificates: \(why)"
        case let .listen(why): return why
        case let .key(why): return why
        }
    }
}

import APNs

/// How the store writes the protocol's `Environment`: one byte in keys and records, fixed on disk
/// (production 1, sandbox 2), and its exact name in import/export lines.
extension Environment {
    var storeByte: UInt8 { self == .production ? 1 : 2 }

    init?(storeByte: UInt8) {
        switch storeByte {
        case 1: self = .production
        case 2: self = .sandbox
        default: return nil
        }
    }

    /// The name used in files and on the command line.
    public var name: String { rawValue }
}

import APNs
import TokenStore

/// `sokuho tokens export`: every token as the JSON lines `tokens import` reads, in installation
/// id order, push-to-start before device. Export → import → export gives the same bytes.
enum TokensExportCommand {
    static let spec = CommandSpec(
        "export",
        summary: "write every registered token as JSON lines (the import format) to stdout",
        options: [StoreAccess.option],
        details: "Each line carries registeredAt, when the phone registered the token (ms), so an import of the export keeps it.",
        run: { invocation throws(CLIError) in
            let store = try StoreAccess.open(invocation, readOnly: true)
            var buffer: [UInt8] = []
            buffer.reserveCapacity(1 << 20)
            let console = invocation.console
            try StoreAccess.run { () throws(StoreError) in
                try store.forEachInstallationWithRegistrationTimes { installation, times throws(StoreError) in
                    for kind in TokenKind.allCases {
                        TokenLineWriter.append(installation, kind: kind, registeredAt: times[kind], to: &buffer)
                    }
                    if buffer.count >= 1 << 20 {
                        console.write(String(decoding: buffer, as: UTF8.self))
                        buffer.removeAll(keepingCapacity: true)
                    }
                }
            }
            console.write(String(decoding: buffer, as: UTF8.self))
            return .success
        })
}

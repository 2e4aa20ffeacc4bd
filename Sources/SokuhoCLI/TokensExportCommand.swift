import APNs
import TokenStore

/// `sokuho tokens export`: every token as the JSON lines `tokens import` reads, in installation
/// store order (UUID ids first), push-to-start before device, then every activity in id order. Export → import →
/// export gives the same bytes.
enum TokensExportCommand {
    static let spec = CommandSpec(
        "export",
        summary: "write every registered token and activity as JSON lines (the import format) to stdout",
        options: [StoreAccess.option],
        details: """
        Each token line carries registeredAt, when the phone registered the token (ms), so an import of
        the export keeps it, and "broadcast":true for an iOS 18 phone. Activity lines follow the token
        lines.
        """,
        run: { invocation throws(CLIError) in
            let store = try StoreAccess.open(invocation, readOnly: true)
            var buffer: [UInt8] = []
            buffer.reserveCapacity(1 << 20)
            let console = invocation.console
            func drain() {
                guard buffer.count >= 1 << 20 else { return }
                console.write(String(decoding: buffer, as: UTF8.self))
                buffer.removeAll(keepingCapacity: true)
            }
            try StoreAccess.run { () throws(StoreError) in
                try store.forEachInstallationWithRegistrationTimes { installation, times throws(StoreError) in
                    for kind in TokenKind.allCases {
                        TokenLineWriter.append(installation, kind: kind, registeredAt: times[kind], to: &buffer)
                    }
                    drain()
                }
                try store.forEachActivity { activity throws(StoreError) in
                    TokenLineWriter.append(activity, to: &buffer)
                    drain()
                }
            }
            console.write(String(decoding: buffer, as: UTF8.self))
            return .success
        })
}

import JSONCore
import TokenStore
import Vocabulary

/// `sokuho tokens import FILE|-`: loads JSON lines of registrations. Parsing runs on this thread
/// while the store's writer thread commits the previous chunk, so both cores work.
enum TokensImportCommand {
    /// Lines per queued chunk (`--batch`); at most `inFlight` chunks wait for the writer, which
    /// commits what is queued in one transaction (up to `TokenStore.Options.maximumBatch`).
    static let defaultChunkSize = 50_000
    static let inFlight = 10
    /// Bad lines listed one by one; the rest are counted.
    static let listedErrors = 100

    static let spec = CommandSpec(
        "import",
        summary: "import registrations and activities from JSON lines (a file or - for stdin)",
        options: [
            StoreAccess.option,
            OptionSpec("--strict", help: "import nothing if any line is bad"),
            OptionSpec("--batch", value: "N", help: "lines per queued write (default \(defaultChunkSize)); a killed import keeps whole batches"),
            OptionSpec("--part-lines", value: "N", help: "a new store from a file is built in parts of N lines, then merged (default \(ImportTarget.defaultPartLines))"),
            OptionSpec("--json", help: "print {\"lines\":…,\"imported\":…,\"bad\":…,\"errors\":[{\"line\":…,\"message\":…}]}"),
        ],
        positionals: [PositionalSpec("FILE", help: "JSON lines, one registration or activity each; - reads stdin")],
        details: """
        Each line is one object, a token line:
          {"installationId":"…","app":"com.example.eew","environment":"sandbox","kind":"pushToStart",
           "token":"<hex>","registeredAt":1717000000000,"broadcast":true,"topics":[{"name":"region:301","minLevel":3}]}
        An installationId must not contain '/' or be '.' or '..' (the API could never address it).
        kind is pushToStart, device or fcm; minLevel (0-255) is optional, default 0. registeredAt (optional)
        is when the phone registered the token, in ms since 1970 (at most a day ahead of now); it is
        kept exactly, and a line without it keeps the time of a token already stored (a new token
        gets the import's time), so a re-sync does not stop 410 pruning. broadcast (optional, true or
        false) says whether the phone runs iOS 18 or later, so push-to-start may carry a broadcast
        channel; without it the installation keeps what the store knows (false when new). A line sets
        that token of the installation (a new token replaces the old one everywhere) and replaces that
        token's topics; the installation's token of the other kind keeps its own.
        An Android installation's line has kind fcm and its FCM registration token as written (1 to
        255 characters of A-Z a-z 0-9 _ : -, not hex), no broadcast:
          {"installationId":"…","app":"com.example.eew","environment":"sandbox","kind":"fcm",
           "token":"dGVzdA:APA91b…","topics":[{"name":"region:301","minLevel":3}]}
        An installation is iOS (pushToStart, device) or Android (fcm), never both: a line of the other
        platform than the installation's stored tokens fails the import, naming the installation.
        Or an activity line, an iOS 17 Live Activity's update token (as 'sokuho activities register'):
          {"activityId":"…","app":"com.example.eew","environment":"sandbox","eventKey":"eew-…",
           "token":"<hex>","startedAt":1717000000000}
        startedAt (optional, ms since 1970, default now) starts the activity's 8 hours.
        Bad lines are reported with their line numbers and the rest is imported (exit 65 if any was
        bad); with --strict nothing is imported when a line is bad (the file is read twice; stdin or a
        pipe is held in memory). Blank lines are skipped. Chunks of --batch lines are parsed while
        earlier ones commit; up to 10 chunks wait, so memory grows with --batch. Into an existing
        store, a killed import keeps the chunks committed so far. A new store (none at --store yet)
        is written only when its import completes, packed in key order and synced, as 'store
        backup' writes one: a killed new import leaves no store (the next import removes what it
        left in DIR/.importing). From a file, a new store is built in parts of --part-lines lines
        (small stores in DIR/.importing, without an fsync per chunk), merged into the store in one
        pass at the end, so each million tokens costs the same however many there are; the parts
        need about three times the packed store's size on disk meanwhile. An installation's
        adjacent lines stay in one part; when the same installation or token appears in two parts
        (lines far apart), the merge cannot be the lines' result and the file is imported again in
        one pass (slower, the same store). Stdin and pipes are imported in one pass.
        """,
        run: { invocation throws(CLIError) in try run(invocation) })

    struct BadLine {
        let line: Int
        let message: String
    }

    static func run(_ invocation: Invocation) throws(CLIError) -> ExitCode {
        let path = invocation.positional("FILE")!
        var reader = try LineReader.open(path)
        defer { reader.close() }
        let strict = invocation.flag("--strict")
        let chunkSize = try invocation.int("--batch", in: 1...1_000_000) ?? defaultChunkSize
        let partLines = try invocation.int("--part-lines", in: 1...100_000_000) ?? ImportTarget.defaultPartLines
        // One clock reading bounds every line's registeredAt (a day of tolerance dwarfs the import).
        let started = WallClock.milliseconds()

        if strict {
            // First pass: parse only. Input that cannot be read twice (stdin, a pipe) is kept in
            // memory for the second pass; a file is read again through the same descriptor, so
            // the file checked is the file imported.
            if !reader.isRewindable {
                let drained = reader
                reader = try drained.slurp()
                drained.close()
            }
            var checked = Counts()
            try reader.forEachLine { number, line throws(CLIError) in
                guard !isBlank(line) else { return }
                checked.lines += 1
                do throws(TokenLineParser.Failure) { _ = try TokenLineParser.parseLine(line, now: started) } catch { checked.note(number, error) }
            }
            if checked.badCount > 0 {
                report(invocation, lines: checked.lines, imported: 0, badCount: checked.badCount, badLines: checked.badLines)
                throw CLIError.data("\(checked.badCount) bad line\(checked.badCount == 1 ? "" : "s") in \(path); nothing imported (--strict)")
            }
            try reader.rewind()
        }

        // A file can be read again if its parts turn out to overlap (`ImportTarget`).
        let target = try ImportTarget.open(invocation, parted: reader.isRewindable)
        var loaded = try load(reader, into: target, invocation: invocation, chunkSize: chunkSize, partLines: partLines, now: started)
        if loaded == nil {
            // Not an error (the store will be right), but the import takes about twice as long: say why.
            invocation.console.progress("\r")
            invocation.console.error("note: an installation or a token is on lines more than a part apart (--part-lines \(partLines)); importing \(path) again in one pass")
            try reader.rewind()
            loaded = try load(reader, into: try ImportTarget.open(invocation, parted: false), invocation: invocation,
                              chunkSize: chunkSize, partLines: partLines, now: started)
        }
        let counts = loaded!
        invocation.console.progress("\r")
        report(invocation, lines: counts.lines, imported: counts.imported, badCount: counts.badCount, badLines: counts.badLines)
        if counts.badCount > 0 {
            throw CLIError.data("\(counts.badCount) bad line\(counts.badCount == 1 ? "" : "s") in \(path) skipped; the other \(counts.imported) were imported")
        }
        return .success
    }

    struct Counts {
        var lines = 0
        var imported = 0
        var badCount = 0
        var badLines: [BadLine] = []

        mutating func note(_ line: Int, _ failure: TokenLineParser.Failure) {
            badCount += 1
            if badLines.count < listedErrors { badLines.append(BadLine(line: line, message: failure.description)) }
        }
    }

    /// Reads every line of `reader` into `target` and finishes it. Nil: the target's parts
    /// overlap and nothing was written (`ImportTarget.finish`).
    static func load(_ reader: LineReader, into target: ImportTarget, invocation: Invocation, chunkSize: Int, partLines: Int,
                     now started: UInt64) throws(CLIError) -> Counts? {
        var counts = Counts()
        var pending: [(ticket: WriteTicket, lines: Int)] = []
        var chunk: [TokenRegistration] = []
        chunk.reserveCapacity(chunkSize)
        // Activity lines of the chunk: few, and a different database, so they go unsorted.
        var activities: [WriteOperation] = []
        var linesInPart = 0

        func waitForOldest() throws(CLIError) {
            let (ticket, count) = pending.removeFirst()
            _ = try StoreAccess.run { () throws(StoreError) in try ticket.wait() }
            counts.imported += count
            if invocation.console.isTerminal { invocation.console.progress("\rimported \(counts.imported) lines…") }
        }
        func flush() throws(CLIError) {
            guard !chunk.isEmpty || !activities.isEmpty else { return }
            let now = WallClock.milliseconds()
            // Keys are built and sorted here, on the parsing thread; the writer only inserts.
            let ticket = try StoreAccess.run { () throws(StoreError) in
                try target.store.enqueue((chunk.isEmpty ? [] : [.registerBatch(RegistrationBatch(chunk, at: now))]) + activities,
                                         durable: target.durable)
            }
            pending.append((ticket, chunk.count + activities.count))
            linesInPart += chunk.count + activities.count
            chunk.removeAll(keepingCapacity: true)
            activities.removeAll(keepingCapacity: true)
            if target.layout == .parts && linesInPart >= partLines {
                while !pending.isEmpty { try waitForOldest() }
                try target.startNextPart()
                linesInPart = 0
            } else if pending.count >= inFlight {
                try waitForOldest()
            }
        }

        do throws(CLIError) {
            try reader.forEachLine { number, line throws(CLIError) in
                guard !isBlank(line) else { return }
                counts.lines += 1
                let parsed: TokenLine
                do throws(TokenLineParser.Failure) { parsed = try TokenLineParser.parseLine(line, now: started) } catch {
                    counts.note(number, error)
                    return
                }
                // A full chunk is written before the next line, unless that line continues the
                // last one's installation: an installation's adjacent lines (its push-to-start
                // and device tokens, as `tokens export` writes them) stay in one chunk, and so
                // in one part.
                if chunk.count + activities.count >= chunkSize {
                    if case let .registration(registration) = parsed, registration.installationID == chunk.last?.installationID {
                        // continues the installation
                    } else {
                        try flush()
                    }
                }
                switch parsed {
                case let .registration(registration): chunk.append(registration)
                case let .activity(activity): activities.append(.putActivity(activity))
                }
            }
            try flush()
            while !pending.isEmpty { try waitForOldest() }
            if target.layout != .store { invocation.console.progress("\rwriting the store, packed…") }
            guard try target.finish() else { return nil }
        } catch {
            // Chunks already queued still commit (a failed batch does not stop the writer): wait
            // for them so the count below says what is in the store.
            while !pending.isEmpty { try? waitForOldest() }
            invocation.console.progress("\r")
            guard target.layout == .store else {
                target.abandon()
                throw CLIError(error.code, "\(target.naming(error).message) (nothing imported: a new store is written only when its import completes)")
            }
            target.store.close()
            throw CLIError(error.code, "\(error.message) (\(counts.imported) lines had been imported)")
        }
        if target.layout == .store { target.store.close() }
        return counts
    }

    static func isBlank(_ line: UnsafeRawBufferPointer) -> Bool {
        line.allSatisfy { $0 == 0x20 || $0 == 0x09 }
    }

    static func report(_ invocation: Invocation, lines: Int, imported: Int, badCount: Int, badLines: [BadLine]) {
        let console = invocation.console
        if invocation.flag("--json") {
            var writer = JSONWriter()
            writer.beginObject()
            writer.key("lines"); writer.int(lines)
            writer.key("imported"); writer.int(imported)
            writer.key("bad"); writer.int(badCount)
            writer.key("errors")
            writer.beginArray()
            for bad in badLines {
                writer.beginObject()
                writer.key("line"); writer.int(bad.line)
                writer.key("message"); writer.string(bad.message)
                writer.endObject()
            }
            writer.endArray()
            writer.endObject()
            console.print(writer.string)
        } else {
            for bad in badLines { console.error("line \(bad.line): \(bad.message)") }
            if badCount > badLines.count { console.error("… and \(badCount - badLines.count) more bad lines") }
            console.print("imported \(imported) of \(lines) lines (\(badCount) bad)")
        }
    }
}

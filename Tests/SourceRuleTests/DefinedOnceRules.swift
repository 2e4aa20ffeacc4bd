import Testing

/// One concept of the product's vocabulary and where it may be written: the files under `Sources`
/// with a line of code (comments cut off) that `matches`. A second copy — a new hex table, another
/// CLOCK_REALTIME read — makes the set differ and the test name the file.
struct DefinedOnceRule: Sendable, CustomTestStringConvertible {
    let concept: String
    /// Where it is written, relative to `Sources`: a file, or a folder ending in "/" (a module).
    let home: String
    let matches: @Sendable (Substring) -> Bool

    init(_ concept: String, in home: String, matches: @escaping @Sendable (Substring) -> Bool) {
        self.concept = concept
        self.home = home
        self.matches = matches
    }

    var testDescription: String { concept }

    func isHome(_ path: String) -> Bool { home.hasSuffix("/") ? path.hasPrefix(home) : path == home }

    /// Fails naming every file besides the home that holds a matching line, and when the home
    /// no longer holds one (the rule would pass vacuously).
    func check() throws {
        let holders = try holders(root: SourceTree.root)
        let copies = holders.filter { !isHome($0) }.sorted()
        #expect(copies == [], "\(concept) is written again in \(copies.joined(separator: ", ")); use the one in \(home)")
        #expect(holders.contains(where: isHome), "\(concept) is no longer found in \(home): is the rule still right?")
    }

    /// The files holding a matching line, relative to `Sources`.
    func holders(root: String) throws -> Set<String> {
        var out: Set<String> = []
        for path in try SourceTree.swiftFiles(under: root + "/Sources")
        where SourceTree.code(try SourceTree.read(root + "/Sources/" + path)).contains(where: matches) {
            out.insert(path)
        }
        return out
    }
}

/// Issue 21, "one vocabulary below it": each of these is defined once, in the lowest module that
/// every user can depend on, and a second copy fails here.
@Suite struct DefinedOnceRuleTests {
    static let rules = [
        DefinedOnceRule("a hex digit table (Hex)", in: "Vocabulary/Hex.swift") { line in
            line.lowercased().contains("0123456789abcdef")
        },
        DefinedOnceRule("a read of the wall clock (WallClock)", in: "Vocabulary/WallClock.swift") { line in
            line.contains("CLOCK_REALTIME") || line.contains("time(nil)") || line.contains("gettimeofday(") || line.contains("Date()")
        },
        // 8-4-4-4-12: an index compared with where the hyphens go (before bytes 4, 6, 8, 10, at
        // characters 8, 13, 18, 23, after digits 8, 12, 16, 20), or the version-4 nibble stamped.
        DefinedOnceRule("a UUID layout or version stamp (UUIDText)", in: "Vocabulary/UUIDText.swift") { line in
            let compared = Set(line.split(separator: "==").dropFirst().compactMap { Int($0.drop { $0 == " " }.prefix { $0.isNumber }) })
            let hyphens: [Set<Int>] = [[4, 6, 8, 10], [8, 13, 18, 23], [8, 12, 16, 20]]
            return hyphens.contains { compared.isSuperset(of: $0) } || line.contains("[4, 6, 8, 10]")
                || (line.contains("0x0f") && line.contains("0x40"))
        },
        DefinedOnceRule("a pthread mutex or condition variable (IO's ConditionLock)", in: "IO/ConditionLock.swift") { line in
            line.contains("pthread_mutex_t") || line.contains("pthread_cond_t")
        },
        // A bare Synchronization.Mutex is invisible to ThreadSanitizer on Linux (Toolchain/tsan would
        // report its guarded state as racing); Vocabulary's Lock wraps the one Mutex so TSan sees it.
        DefinedOnceRule("a Synchronization.Mutex (Vocabulary's Lock)", in: "Vocabulary/Lock.swift") { line in
            line.contains("Mutex<") || line.contains("Mutex(")
        },
        // The one place a failed C call stops the process with its errno: IO's Syscall. (LMDB's and
        // the other libraries' own codes have their checked wrappers, see ReturnCodeRules.)
        DefinedOnceRule("a check of errno that stops the process (IO's Syscall)", in: "IO/") { line in
            let stops = line.contains("precondition") || line.contains("fatalError(")
            let errno = line.contains("errno") || (line.contains("strerror(") && !line.contains("_strerror("))
            return stops && errno || line.contains("enum Posix") || line.contains("struct Posix")
        },
        DefinedOnceRule("a strict JSON object reader (JSONObjectFields)", in: "JSONCore/JSONObjectFields.swift") { line in
            line.contains("appears twice; give it once") || line.contains("check its spelling (known:")
        },
        // Issue 21's four bounds (APNs' parser, the sender's storage, the store, the simulator) became
        // one type: inline storage is a tuple of integer words, and a token bound is a constant whose
        // name says token-and-length (or byte count / hex digits) set from a number.
        DefinedOnceRule("a device token's inline storage or length bound (DeviceToken)", in: "Vocabulary/DeviceToken.swift") { line in
            DeviceTokenRule.declaresInlineStorage(line) || DeviceTokenRule.declaresLengthBound(line)
        },
    ]

    @Test("Each piece of the vocabulary is defined once", arguments: rules)
    func definedOnce(_ rule: DefinedOnceRule) throws {
        try rule.check()
    }
}

import Testing

/// Issue 21, "handlers get what they use": in the HTTP API (`Sources/Daemon`) only the router and
/// the daemon that builds it hold the runtime's `Service`; each route family's handlers take its
/// port (`EventDesk`, `InstallationDesk`, `ChannelDesk`, `StatusView`). A handler that reaches
/// through the whole Service again — a `service` parameter, `self.service` — fails here.
@Suite struct DaemonPortRuleTests {
    /// The files that may hold the Service itself.
    static let holders: Set<String> = ["Daemon.swift", "Router.swift"]

    /// A line of code that holds or passes the Service: the word `service`, or `Service` as a
    /// value's type (`: Service`, `Service?`, `[Service]`). Its nested names (`Service.Refusal`)
    /// and a port's conformance (`extension Service: EventDesk`) are not.
    /// Simple word boundaries: the default, Unicode's, keeps `self.service` one word.
    static func holdsService(_ line: Substring) -> Bool {
        line.contains(/\bservice\b/.wordBoundaryKind(.simple)) || line.contains(/:\s*Service\b(?!\.)/.wordBoundaryKind(.simple))
            || line.contains(/\bService[?!)\],>]/.wordBoundaryKind(.simple))
    }

    @Test func onlyTheRouterHoldsTheService() throws {
        let daemon = SourceTree.root + "/Sources/Daemon"
        var holding: Set<String> = []
        for file in try SourceTree.swiftFiles(in: daemon)
        where SourceTree.code(try SourceTree.read(daemon + "/" + file)).contains(where: Self.holdsService) {
            holding.insert(file)
        }
        let others = holding.subtracting(Self.holders).sorted()
        #expect(others == [], "\(others.joined(separator: ", ")) holds the whole Service; give its handlers a port of what they use (EventDesk.swift)")
        #expect(holding == Self.holders, "the router no longer holds the Service: is the rule still right?")
    }

    @Test func theRuleTellsTheServiceFromItsNames() {
        #expect(Self.holdsService("    static func submit(_ request: HTTPRequest, service: Service) -> HTTPResponse {"))
        #expect(Self.holdsService("        let store = self.service?.store"))
        #expect(Self.holdsService("    package weak var runtime: Service?"))
        #expect(!Self.holdsService("    static func status(of refusal: Service.Refusal) -> Int {"))
        #expect(!Self.holdsService("extension Service: EventDesk {"))
        #expect(!Self.holdsService("    func submit(_ body: [UInt8]) -> Service.Submission"))
    }
}

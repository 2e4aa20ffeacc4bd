import JSONCore
import Simulator
import SokuhoCLI
import Testing

/// `sokuho channels create|list|read|delete` against the simulator's management port.
@Suite struct ChannelsCommandTests {
    @Test func createListReadDelete() throws {
        try withSimulator { sim in
            let first = sim.run(["channels", "create"]), second = sim.run(["channels", "create", "--storage-policy", "1"])
            #expect(first.code == .success && second.code == .success, "\(first)\n\(second)")
            let one = first.line, two = second.line

            let list = sim.run(["channels", "list"])
            #expect(list.code == .success, "\(list)")
            #expect(Set(list.out.split(separator: "\n").map(String.init)) == [one, two])

            let read = sim.run(["channels", "read", "--channel", two])
            #expect(read.code == .success, "\(read)")
            #expect(read.line == "\(two)  storage-policy 1  push-type LiveActivity")
            let readJSON = sim.run(["channels", "read", "--channel", one, "--json"])
            let info = try JSONParser.parse(Array(readJSON.line.utf8))
            #expect(info["channel"]?.stringValue == one)
            #expect(info["storagePolicy"]?.int64Value == 0)

            let delete = sim.run(["channels", "delete", "--channel", one])
            #expect(delete.code == .success, "\(delete)")
            #expect(delete.line == "deleted \(one)")
            // Deleting it again finds it gone (404 BadPath): the channel is deleted either way, so exit 0.
            let again = sim.run(["channels", "delete", "--channel", one])
            #expect(again.code == .success, "\(again)")
            #expect(again.line == "deleted \(one)")
            #expect(again.err.contains("already deleted (404 BadPath)"), "\(again)")
            let againJSON = sim.run(["channels", "delete", "--channel", one, "--json"])
            #expect(againJSON.code == .success, "\(againJSON)")
            #expect(againJSON.line == "{\"deleted\":\"\(one)\",\"alreadyDeleted\":true}")

            let listJSON = sim.run(["channels", "list", "--json"])
            #expect(listJSON.line == "{\"channels\":[\"\(two)\"]}")
            #expect(sim.counters.channelRequests == 9)
        }
    }

    @Test func readingAnUnknownChannelIsRefused() throws {
        try withSimulator { sim in
            let read = sim.run(["channels", "read", "--channel", "AAAAAAAAAAAAAAAAAAAAAAAA", "--json"])
            #expect(read.code == .refused, "\(read)")
            let answer = try JSONParser.parse(Array(read.line.utf8))
            #expect(answer["status"]?.int64Value == 400)
            #expect(answer["reason"]?.stringValue == "ChannelNotRegistered")
        }
    }

    @Test func channelsOfAnotherAppAreRefused() throws {
        try withSimulator({ $0.bundles = [testBundle] }) { sim in
            let create = sokuho(["channels", "create"] + sim.connectionOptions(topic: "com.example.other"))
            #expect(create.code == .refused, "\(create)")
            #expect(create.err.contains("403"), "\(create)")
        }
    }
}

import JSONCore
import Testing
@testable import TokenStore

/// The import line format: strict, with messages that point at the mistake.
@Suite struct TokenLineTests {
    let hex = "5e5532fbeea293f80bc942ee9086c171b9b501d1d854bb7180021590ff0b4dc3"
    var line: String {
        #"{"installationId":"A1","app":"com.example.eew","environment":"sandbox","kind":"pushToStart","token":"\#(hex)","topics":[{"name":"region:301","minLevel":3}]}"#
    }

    func failure(_ text: String) -> String? {
        do { _ = try TokenLineParser.parse(text); return nil } catch { return error.message }
    }

    @Test func theIssuesExampleLineParses() throws {
        let registration = try TokenLineParser.parse(line)
        #expect(registration.installationID == "A1")
        #expect(registration.app == "com.example.eew")
        #expect(registration.environment == .sandbox)
        #expect(registration.kind == .pushToStart)
        #expect(registration.token.count == 32)
        #expect(registration.topics == [TopicSubscription(name: "region:301", minLevel: 3)])
    }

    @Test func anyValidJSONSpellingOfTheSameObjectParsesTheSame() throws {
        let expected = try TokenLineParser.parse(line)
        let variants = [
            #" { "topics" : [ { "minLevel" : 3 , "name" : "region:301" } ] , "token" : "\#(hex.uppercased())" , "kind" : "pushToStart" , "environment" : "sandbox" , "app" : "com.example.eew" , "installationId" : "A1" } "#,
            #"{"installationId":"\u0041\u0031","app":"com\u002eexample.eew","environment":"sandbox","kind":"pushToStart","token":"\#(hex)","topics":[{"name":"region:301","minLevel":3}]}"#,
        ]
        for variant in variants {
            #expect(try TokenLineParser.parse(variant) == expected, "\(variant)")
            #expect((try? JSONParser.parse(variant)) != nil)
        }
        let noLevel = try TokenLineParser.parse(line.replacingOccurrences(#","minLevel":3"#, ""))
        #expect(noLevel.topics == [TopicSubscription(name: "region:301", minLevel: 0)])
        let unicode = try TokenLineParser.parse(line.replacingOccurrences("region:301", #"東京\ud83c\udf0a"#))
        #expect(unicode.topics.first?.name == "東京🌊")
    }

    @Test func badLinesAreRefusedWithAMessageNamingTheProblem() {
        let cases: [(String, String)] = [
            ("", "a line must be one JSON object"),
            ("[]", "a line must be one JSON object"),
            (line + "x", "unexpected text after the JSON object"),
            (String(line.dropLast()), "unexpected end of line"),
            (line.replacingOccurrences(#""app""#, #""ap""#), #"unknown field "ap""#),
            (line.replacingOccurrences(#""kind":"pushToStart","#, ""), #"missing field "kind""#),
            (line.replacingOccurrences(#""kind":"pushToStart""#, #""kind":"pushToStart","kind":"device""#), #"field "kind" appears twice"#),
            (line.replacingOccurrences("sandbox", "staging"), #"environment must be "production" or "sandbox""#),
            (line.replacingOccurrences("pushToStart", "alert"), #"kind must be "pushToStart" or "device""#),
            (line.replacingOccurrences(hex, "zz" + hex.dropFirst(2)), "token must be an even number of hex digits"),
            (line.replacingOccurrences(hex, String(hex.dropFirst())), "token must be an even number of hex digits"),
            (line.replacingOccurrences(hex, "abcd"), "token is 2 bytes"),
            (line.replacingOccurrences(#""minLevel":3"#, #""minLevel":300"#), "minLevel must be a whole number from 0 to 255"),
            (line.replacingOccurrences(#""minLevel":3"#, #""minLevel":3.5"#), "minLevel must be a whole number from 0 to 255"),
            (line.replacingOccurrences(#""minLevel":3"#, #""minLevel":-1"#), "minLevel must be a whole number from 0 to 255"),
            (line.replacingOccurrences(#""minLevel":3"#, #""minLevel":03"#), "minLevel must be a whole number from 0 to 255"),
            (line.replacingOccurrences(#""minLevel":3"#, #""level":3"#), #"unknown topic field "level""#),
            (line.replacingOccurrences(#""A1""#, #""""#), "installationId is empty"),
            (line.replacingOccurrences(#""A1""#, "\"A\u{1}\""), "a control character must be escaped"),
            (line.replacingOccurrences(#""A1""#, #""A\x""#), "invalid escape"),
            (line.replacingOccurrences(#""A1""#, #""\ud83c""#), "surrogate must come in a pair"),
            (line.replacingOccurrences("region:301", #"a\u0000b"#), "topic name contains a control character"),
            (line.replacingOccurrences(#"{"name":"region:301","minLevel":3}"#, #"{"name":"a"},{"name":"a"}"#), "topic 'a' is listed twice"),
            (line.replacingOccurrences(#","topics""#, #" "topics""#), "expected ',' or '}' after a value"),
        ]
        for (text, expected) in cases {
            let message = failure(text)
            #expect(message?.contains(expected) == true, "\(text) → \(message ?? "accepted")")
        }
        // Where the line is not JSON at all, the general parser agrees.
        for text in ["", "[]x", line + "x", String(line.dropLast()), line.replacingOccurrences(#""A1""#, #""A\x""#),
                     line.replacingOccurrences(#""minLevel":3"#, #""minLevel":03"#)] {
            #expect((try? JSONParser.parse(text)) == nil, "\(text)")
        }
    }

    @Test func registeredAtIsOptionalAndReadAsExactMilliseconds() throws {
        #expect(try TokenLineParser.parse(line).registeredAt == nil)
        let timed = line.replacingOccurrences(#","topics""#, #","registeredAt":1717000000123,"topics""#)
        #expect(try TokenLineParser.parse(timed, now: 1_717_000_000_000).registeredAt == 1_717_000_000_123)
        let first = line.replacingOccurrences(#"{"installationId""#, #"{"registeredAt":0,"installationId""#)
        #expect(try TokenLineParser.parse(first, now: 1_717_000_000_000).registeredAt == 0)
        // Up to a day ahead of now is clock skew, not a mistake.
        let skewed = line.replacingOccurrences(#","topics""#, #","registeredAt":1717086400000,"topics""#)
        #expect(try TokenLineParser.parse(skewed, now: 1_717_000_000_000).registeredAt == 1_717_086_400_000)
    }

    @Test func aBadRegisteredAtIsRefusedNamingTheField() {
        let now: UInt64 = 1_717_000_000_000
        func failure(_ value: String) -> String? {
            do {
                _ = try TokenLineParser.parse(line.replacingOccurrences(#","topics""#, #","registeredAt":\#(value),"topics""#), now: now)
                return nil
            } catch { return error.message }
        }
        for value in ["-1", "1.5", "1e3", "017", #""1717000000000""#, "null", "true"] {
            let message = failure(value)
            #expect(message?.hasPrefix("registeredAt must be a whole number of milliseconds since 1970") == true, "\(value) → \(message ?? "accepted")")
        }
        // A day and a millisecond ahead, microseconds, and more than 64 bits.
        for value in ["1717086400001", "1717000000000000", "99999999999999999999999"] {
            let message = failure(value)
            #expect(message?.contains("registeredAt") == true && message?.contains("is more than a day after now") == true,
                    "\(value) → \(message ?? "accepted")")
        }
        let twice = line.replacingOccurrences(#","topics""#, #","registeredAt":1,"registeredAt":2,"topics""#)
        #expect(self.failure(twice)?.contains(#"field "registeredAt" appears twice"#) == true)
    }

    @Test func broadcastIsOptionalAndOnlyTrueOrFalse() throws {
        #expect(try TokenLineParser.parse(line).broadcast == nil)
        for (value, expected) in [("true", true), ("false", false)] {
            let flagged = line.replacingOccurrences(#","topics""#, #","broadcast":\#(value),"topics""#)
            #expect(try TokenLineParser.parse(flagged).broadcast == expected)
        }
        for value in [#""true""#, "1", "null", "tru", "True"] {
            let bad = line.replacingOccurrences(#","topics""#, #","broadcast":\#(value),"topics""#)
            #expect(throws: TokenLineParser.Failure(column: column(of: #""broadcast":"#, in: bad) + 12, message: "broadcast must be true or false")) {
                _ = try TokenLineParser.parse(bad)
            }
        }
        let twice = line.replacingOccurrences(#","topics""#, #","broadcast":true,"broadcast":false,"topics""#)
        #expect(failure(twice)?.contains(#"field "broadcast" appears twice"#) == true)
    }

    @Test func theMessageCarriesTheColumnAndNeverTheToken() {
        let bad = line.replacingOccurrences("pushToStart", "alert")
        do {
            _ = try TokenLineParser.parse(bad)
            Issue.record("accepted")
        } catch {
            let prefix = #"{"installationId":"A1","app":"com.example.eew","environment":"sandbox","kind":"#
            #expect(error.column == prefix.utf8.count + 1)
        }
        // A bad token is described, never echoed (odd length, a non-hex digit, too long).
        for badToken in [hex + "0", hex + "zz", String(repeating: hex, count: 7)] {
            let message = failure(line.replacingOccurrences(hex, badToken))
            #expect(message?.hasPrefix("token") == true && message?.contains(hex) == false, "\(message ?? "accepted")")
        }
    }

    @Test func writtenLinesParseBackToTheSameInstallation() throws {
        var installation = Installation(id: "in\"stall\\1", app: "com.example.eew", environment: .production,
                                        pushToStartTopics: [TopicSubscription(name: "a", minLevel: 1)],
                                        deviceTopics: [TopicSubscription(name: "東京", minLevel: 5), TopicSubscription(name: "b")],
                                        createdAt: 0, updatedAt: 0)
        installation.setToken(Array(0..<32), kind: .device)
        installation.setToken(Array(100..<164), kind: .pushToStart)
        var bytes: [UInt8] = []
        TokenLineWriter.append(installation, kind: .pushToStart, registeredAt: 1_717_000_000_123, to: &bytes)
        TokenLineWriter.append(installation, kind: .device, registeredAt: nil, to: &bytes)
        let lines = String(decoding: bytes, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(lines.count == 2)
        let first = try TokenLineParser.parse(lines[0])
        let second = try TokenLineParser.parse(lines[1])
        #expect(first.installationID == installation.id && first.kind == .pushToStart && first.token == Array(100..<164))
        #expect(second.kind == .device && second.token == Array(0..<32) && second.environment == .production)
        #expect(first.topics == installation.topics(.pushToStart) && second.topics == installation.topics(.device))
        #expect(lines[1].contains(#""token":"000102"#))
        // The time is written when known, and read back exactly.
        #expect(first.registeredAt == 1_717_000_000_123 && lines[0].contains(#","registeredAt":1717000000123,"topics":["#))
        #expect(second.registeredAt == nil && !lines[1].contains("registeredAt"))
        // broadcast is written only when true, between registeredAt and topics, and read back.
        #expect(!lines.contains { $0.contains("broadcast") })
        installation.broadcast = true
        var flagged: [UInt8] = []
        TokenLineWriter.append(installation, kind: .device, registeredAt: 5, to: &flagged)
        let flaggedLine = String(decoding: flagged.dropLast(), as: UTF8.self)
        #expect(flaggedLine.contains(#","registeredAt":5,"broadcast":true,"topics":["#))
        #expect(try TokenLineParser.parse(flaggedLine).broadcast == true)
    }

    var activityLine: String {
        #"{"activityId":"act-1","app":"com.example.eew","environment":"production","eventKey":"eew-7","token":"\#(hex)","startedAt":1717000000000}"#
    }

    @Test func anActivityLineIsAnActivityWithItsUpdateTokenWrittenBackTheSame() throws {
        let now: UInt64 = 1_717_000_001_000
        let expected = ActivityRecord(id: "act-1", app: "com.example.eew", environment: .production,
                                      updateToken: try TokenLineParser.parse(line).token, eventKey: "eew-7", startedAt: 1_717_000_000_000)
        #expect(try TokenLineParser.parseLine(activityLine, now: now) == .activity(expected))
        // Any member order: the first field of one shape only decides, wherever it stands.
        let reordered = #"{"token":"\#(hex)","app":"com.example.eew","environment":"production","startedAt":1717000000000,"eventKey":"eew-7","activityId":"act-1"}"#
        #expect(try TokenLineParser.parseLine(reordered, now: now) == .activity(expected))
        var bytes: [UInt8] = []
        TokenLineWriter.append(expected, to: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == activityLine + "\n")
        // Without startedAt the activity starts at the import, and its 8 hours run from then.
        let untimed = try TokenLineParser.parseLine(activityLine.replacingOccurrences(#","startedAt":1717000000000"#, ""), now: now)
        #expect(untimed == .activity(ActivityRecord(id: "act-1", app: "com.example.eew", environment: .production,
                                                    updateToken: expected.updateToken, eventKey: "eew-7", startedAt: now)))
        // Where only a token line will do, an activity line is refused.
        #expect(failure(activityLine)?.contains("an activity line where a token line was expected") == true)
    }

    @Test func badActivityLinesAreRefusedNamingTheFieldAtItsColumn() {
        let now: UInt64 = 1_717_000_001_000
        func refusal(_ text: String) -> TokenLineParser.Failure? {
            do { _ = try TokenLineParser.parseLine(text, now: now); return nil } catch { return error }
        }
        let withKind = activityLine.replacingOccurrences(#""eventKey""#, #""kind":"device","eventKey""#)
        #expect(refusal(withKind) == TokenLineParser.Failure(column: column(of: #""kind""#, in: withKind),
                                                             message: #"field "kind" does not belong in an activity line (it has "activityId")"#))
        let withEvent = line.replacingOccurrences(#","topics""#, #","eventKey":"eew-7","topics""#)
        #expect(refusal(withEvent) == TokenLineParser.Failure(column: column(of: #""eventKey""#, in: withEvent),
                                                              message: #"field "eventKey" does not belong in a token line (it has "installationId")"#))
        let cases: [(String, String)] = [
            (activityLine.replacingOccurrences(#","eventKey":"eew-7""#, ""), #"missing field "eventKey""#),
            (activityLine.replacingOccurrences(#""app""#, #""activityId":"act-2","app""#), #"field "activityId" appears twice"#),
            (activityLine.replacingOccurrences(#""eventKey""#, #""event""#), #"unknown field "event""#),
            (activityLine.replacingOccurrences(#""act-1""#, #""""#), "activityId is empty"),
            (activityLine.replacingOccurrences(#""eew-7""#, #""""#), "eventKey is empty"),
            (activityLine.replacingOccurrences(hex, "abc"), "token must be an even number of hex digits"),
            (activityLine.replacingOccurrences("1717000000000", "-1"), "startedAt must be a whole number of milliseconds since 1970"),
            (activityLine.replacingOccurrences("1717000000000", "1717000000000000"), "startedAt (1717000000000000 ms) is more than a day after now"),
            (activityLine.replacingOccurrences("production", "staging"), #"environment must be "production" or "sandbox""#),
        ]
        for (text, expected) in cases {
            let message = refusal(text)?.message
            #expect(message?.contains(expected) == true, "\(text) → \(message ?? "accepted")")
        }
    }
}

extension String {
    /// Replaces every occurrence of `target` (no Foundation in tests either).
    func replacingOccurrences(_ target: String, _ replacement: String) -> String {
        let source = Array(utf8)
        let pattern = Array(target.utf8)
        var result: [UInt8] = []
        var index = 0
        while index < source.count {
            if index + pattern.count <= source.count, Array(source[index..<index + pattern.count]) == pattern {
                result += replacement.utf8
                index += pattern.count
            } else {
                result.append(source[index])
                index += 1
            }
        }
        return String(decoding: result, as: UTF8.self)
    }
}

/// The 1-based byte column where `text` first occurs in `line` (what a `Failure` reports).
func column(of text: String, in line: String) -> Int {
    let haystack = Array(line.utf8), needle = Array(text.utf8)
    let offset = (0...(haystack.count - needle.count)).first { Array(haystack[$0..<$0 + needle.count]) == needle }
    return offset! + 1
}

extension TokenLineParser.Failure {
    var message: String { description }
}

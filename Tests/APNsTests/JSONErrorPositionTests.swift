import JSONCore
import Testing

/// A JSON mistake is reported where an editor shows it — line and column — with the byte offset
/// kept for tools (issue 24: "byte 304" sent operators counting bytes in their configuration).
@Suite struct JSONErrorPositionTests {
    @Test func aMistakeOnTheThirdLineIsReportedAtLineThreeWithItsColumnAndByte() {
        let text = "{\n  \"apps\": [],\n  \"listen\": [\"127.0.0.1:8080\",]\n}\n"
        #expect {
            _ = try JSONParser.parse(text)
        } throws: { error in
            guard let error = error as? JSONParser.Error else { return false }
            let offset = Array(text.utf8).lastIndex(of: UInt8(ascii: "]"))!
            return error.line == 3 && error.column == 31 && error.offset == offset
                && error.description.hasSuffix("at line 3, column 31 (byte \(offset))")
        }
    }

    @Test func aMistakeOnTheFirstLineIsLineOne() {
        #expect {
            _ = try JSONParser.parse("[1,,2]")
        } throws: { error in
            (error as? JSONParser.Error).map { $0.line == 1 && $0.column == 4 && $0.offset == 3 } ?? false
        }
    }
}

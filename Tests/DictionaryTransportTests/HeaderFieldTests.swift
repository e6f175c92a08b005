import DictionaryCodec
import DictionaryTransport
import HTTPTypes
import Testing
import TestSupport

@Suite struct AvailableDictionaryTests {
    @Test func parsesTheReferenceHash() {
        let parsed = AvailableDictionary.parse(fields(("available-dictionary", referenceAvailableDictionary)))
        #expect(parsed == .present(AvailableDictionary(hash: referenceHash)))
        #expect(AvailableDictionary(hash: referenceHash).fieldValue == referenceAvailableDictionary)
    }

    @Test func absentFieldIsAbsent() {
        #expect(AvailableDictionary.parse(fields(("accept-encoding", "gzip"))) == .absent)
    }

    @Test func surroundingSpacesAreAllowed() {
        #expect(AvailableDictionary.parse(fieldValue: "  " + referenceAvailableDictionary + " ").value?.hash == referenceHash)
    }

    @Test func missingPaddingIsAccepted() {
        // RFC 9651 §4.2.7: parsers SHOULD NOT fail when "=" padding is missing.
        #expect(referenceAvailableDictionary.hasSuffix("=:"))
        let unpadded = String(referenceAvailableDictionary.dropLast(2)) + ":"
        #expect(AvailableDictionary.parse(fieldValue: unpadded).value?.hash == referenceHash)
    }

    @Test func parametersOnTheItemAreIgnored() {
        #expect(AvailableDictionary.parse(fieldValue: referenceAvailableDictionary + ";x=1").value?.hash == referenceHash)
    }

    @Test(arguments: [
        ("U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY", AvailableDictionary.Rejection.notBinary),  // a token, not binary
        ("U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=", .malformed),  // base64 without colons
        ("\"\(referenceAvailableDictionary)\"", .notBinary),
        (":U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9A==:", .wrongLength),  // 31 bytes
        (":AAAA:", .wrongLength),
        ("::", .wrongLength),
        (":not base64!:", .malformed),
        (":U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=", .malformed),  // unterminated
        ("", .malformed),
        ("\(referenceAvailableDictionary), \(referenceAvailableDictionary)", .repeated),  // a list in one line
        (":" + String(repeating: "A", count: 200) + ":", .oversized),
    ])
    func rejectsMalformedValues(value: String, expected: AvailableDictionary.Rejection) {
        #expect(AvailableDictionary.parse(fieldValue: value) == .rejected(expected))
    }

    @Test func repeatedFieldLinesFailClosedEvenWhenEqual() {
        let request = fields(("available-dictionary", referenceAvailableDictionary), ("Available-Dictionary", referenceAvailableDictionary))
        #expect(AvailableDictionary.parse(request) == .rejected(.repeated))
    }
}

@Suite struct DictionaryIDTests {
    @Test func validatesLengthAndCharacters() {
        #expect(DictionaryID(String(repeating: "a", count: 1024)) != nil)
        #expect(DictionaryID(String(repeating: "a", count: 1025)) == nil)
        #expect(DictionaryID("") != nil)
        #expect(DictionaryID("tab\there") == nil)
        #expect(DictionaryID("café") == nil)
    }

    @Test func serialisesAsAnEscapedString() {
        #expect(DictionaryID("dictionary-12345")!.fieldValue == "\"dictionary-12345\"")
        #expect(DictionaryID("a\"b\\c")!.fieldValue == #""a\"b\\c""#)
    }

    @Test func parsesFromRequests() {
        #expect(DictionaryID.parse(fields(("dictionary-id", "\"v1\""))) == .present(DictionaryID("v1")!))
        #expect(DictionaryID.parse(fields(("dictionary-id", #""a\"b""#))).value?.value == "a\"b")
        #expect(DictionaryID.parse(HTTPFields()) == .absent)
    }

    @Test func rejectsDuplicatesTokensAndOversizedValues() {
        #expect(DictionaryID.parse(fields(("dictionary-id", "\"a\""), ("dictionary-id", "\"a\""))) == .rejected(.repeated))
        #expect(DictionaryID.parse(fieldValue: "\"a\", \"b\"") == .rejected(.repeated))
        #expect(DictionaryID.parse(fieldValue: "v1") == .rejected(.notString))
        #expect(DictionaryID.parse(fieldValue: "\"unterminated") == .rejected(.malformed))
        #expect(DictionaryID.parse(fieldValue: "\"" + String(repeating: "x", count: 1025) + "\"") == .rejected(.oversized))
        #expect(DictionaryID.parse(fieldValue: "\"" + String(repeating: "x", count: 3000) + "\"") == .rejected(.oversized))
    }
}

@Suite struct UseAsDictionaryTests {
    @Test func serialisesTheSpecExamples() throws {
        #expect(try UseAsDictionary(match: "/product/*", matchDestinations: ["document"]).fieldValue()
            == #"match="/product/*", match-dest=("document")"#)
        #expect(try UseAsDictionary(match: "/app/*/main.js", id: DictionaryID("dictionary-12345")).fieldValue()
            == #"match="/app/*/main.js", id="dictionary-12345""#)
    }

    @Test func writesTypeRawAsAToken() throws {
        let value = try UseAsDictionary(match: "/a", matchDestinations: ["script", ""], writesType: true).fieldValue()
        #expect(value == #"match="/a", match-dest=("script" ""), type=raw"#)
    }

    @Test func roundTrips() throws {
        let original = UseAsDictionary(match: #"/x/\"q\"/*"#, matchDestinations: ["style", "script"], id: DictionaryID("id 1"), writesType: true)
        #expect(try UseAsDictionary(fieldValue: original.fieldValue()) == original)
    }

    @Test func parsingIgnoresUnknownMembers() throws {
        let parsed = try UseAsDictionary(fieldValue: #"match="/a/*", future=?1, other=("x");p=2"#)
        #expect(parsed.match == "/a/*")
        #expect(parsed.matchDestinations.isEmpty)
        #expect(parsed.id == nil)
    }

    @Test func parsingRejectsWhatClientsWouldIgnore() {
        #expect(throws: UseAsDictionary.Problem.missingMatch) { try UseAsDictionary(fieldValue: #"id="x""#) }
        #expect(throws: UseAsDictionary.Problem.missingMatch) { try UseAsDictionary(fieldValue: #"match="""#) }
        #expect(throws: UseAsDictionary.Problem.matchNotString) { try UseAsDictionary(fieldValue: "match=abc") }
        #expect(throws: UseAsDictionary.Problem.matchDestNotInnerListOfStrings) {
            try UseAsDictionary(fieldValue: #"match="/a", match-dest="document""#)
        }
        #expect(throws: UseAsDictionary.Problem.matchDestNotInnerListOfStrings) {
            try UseAsDictionary(fieldValue: #"match="/a", match-dest=(document)"#)
        }
        #expect(throws: UseAsDictionary.Problem.idNotValid) {
            try UseAsDictionary(fieldValue: #"match="/a", id=abc"#)
        }
        #expect(throws: UseAsDictionary.Problem.unsupportedType("compressed")) {
            try UseAsDictionary(fieldValue: #"match="/a", type=compressed"#)
        }
        #expect(throws: UseAsDictionary.Problem.unsupportedType("(not a token)")) {
            try UseAsDictionary(fieldValue: #"match="/a", type="raw""#)
        }
        #expect(throws: UseAsDictionary.Problem.malformed) { try UseAsDictionary(fieldValue: "match=\"/a") }
        #expect(throws: UseAsDictionary.Problem.oversized) {
            try UseAsDictionary(fieldValue: "match=\"/" + String(repeating: "a", count: 9000) + "\"")
        }
        #expect(throws: UseAsDictionary.Problem.repeated) {
            try UseAsDictionary.parse(fields(("use-as-dictionary", #"match="/a""#), ("use-as-dictionary", #"match="/b""#)))
        }
    }

    @Test func serialisingRefusesValuesAnSfStringCannotCarry() {
        #expect(throws: UseAsDictionary.Problem.missingMatch) { try UseAsDictionary(match: "").fieldValue() }
        #expect(throws: UseAsDictionary.Problem.matchNotSerialisable("/café")) { try UseAsDictionary(match: "/café").fieldValue() }
    }

    @Test func matchDestinationFilter() {
        let scripts = UseAsDictionary(match: "/a", matchDestinations: ["script"])
        #expect(scripts.allows(destination: "script"))
        #expect(!scripts.allows(destination: "document"))
        #expect(scripts.allows(destination: nil))
        #expect(UseAsDictionary(match: "/a").allows(destination: "image"))
        // fetch() and XHR: the Fetch destination "" arrives as `Sec-Fetch-Dest: empty`.
        let apiCalls = UseAsDictionary(match: "/api/*", matchDestinations: [""])
        #expect(apiCalls.allows(destination: "empty") && !apiCalls.allows(destination: "document"))
        #expect(!scripts.allows(destination: "empty"))
    }
}

/// The lab's fixed scenarios: for each, the resources the lab serves under `/lab/r/<run>/<scenario>/`,
/// the steps a client runs (in plan order) and what every step must show. Pure data; thread-safe.
///
/// Resource names are relative to the scenario's folder; `match` patterns are written with `{base}`
/// for that folder's absolute path, so every run has its own dictionaries and runs never mix.
enum LabScenarioCatalog {
    /// What the lab answers at one resource name.
    enum Resource: Sendable {
        /// A dictionary: `Use-As-Dictionary: <useAsDictionary>` (with `{base}` and `{run}` filled in)
        /// and `Cache-Control: <cacheControl>`, body = the named dictionary's bytes.
        case dictionary(name: String, useAsDictionary: String, cacheControl: String)
        /// Content (`name`), compressed with whichever of the run's dictionaries the request names
        /// (dcz preferred, then dcb) when the request offers the coding; identity otherwise.
        case content(name: String)
        /// Content compressed with a decoy dictionary whose hash the dcz/dcb header names — never the
        /// dictionary the request named.
        case wrongHash(content: String)
        /// An HTML page with `Link: <resource>; rel="compression-dictionary"`.
        case page(link: String)
    }

    /// An expectation on the requests recorded for one step (the last one; for probes, any try).
    enum Check: Sendable {
        case names(dictionary: String)
        case namesAny
        case namesNone
        case offersDictionaryCodings
        case offersNoDictionaryCodings
        case echoesID(String)
        case singleAvailableDictionary
        case decoded(content: String)
        case rejected
        /// The client requested this resource of the scenario by itself (a Link target).
        case fetched(resource: String)
        /// The request came at least `seconds` after the last request of step `step` (a plan wait).
        case cameAfter(step: String, seconds: Double)
    }

    enum Kind: Sendable, Equatable {
        case fetch, page
        /// Ready when the request names `dictionary` (nil: any dictionary).
        case probe(dictionary: String?)
        case wait(seconds: Double)
    }

    struct Step: Sendable {
        var name: String
        var kind: Kind
        var resource: String = ""
        var destination: String = ""
        var report = false
        var expect: String
        var checks: [Check] = []
    }

    struct Scenario: Sendable {
        var id: String
        var title: String
        var rfc: String
        var checks: String
        var resources: [String: Resource]
        var steps: [Step]
    }

    /// The identifier of `match-dest`'s scenario etc., used by tests and the README.
    static let dictionaryID = "lab:{run} \"quoted\" back\\slash"

    static let scenarios: [Scenario] = [
        Scenario(
            id: "registration", title: "Registration and use", rfc: "RFC 9842 §2.1, §2.2, §4, §5",
            checks: "A Use-As-Dictionary response is stored; a later matching request names its SHA-256 in Available-Dictionary, offers dcb/dcz and decodes the delta.",
            resources: [
                "dict.js": .dictionary(name: "main", useAsDictionary: #"match="{base}app.*.js""#, cacheControl: "max-age=3600"),
                "app.probe.js": .content(name: "probe"),
                "app.v2.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register", kind: .fetch, resource: "dict.js", expect: "store the dictionary"),
                Step(name: "probe", kind: .probe(dictionary: "main"), resource: "app.probe.js",
                     expect: "name the dictionary once stored", checks: [.names(dictionary: "main")]),
                Step(name: "use", kind: .fetch, resource: "app.v2.js", report: true,
                     expect: "Available-Dictionary = SHA-256 of dict.js, dcb/dcz offered, the decoded body's SHA-256 reported",
                     checks: [.names(dictionary: "main"), .offersDictionaryCodings, .decoded(content: "app")]),
            ]),
        Scenario(
            id: "dictionary-id", title: "Dictionary-ID echoed exactly", rfc: "RFC 9842 §2.1.3, §2.3",
            checks: "The id member of Use-As-Dictionary comes back unchanged as the sf-string Dictionary-ID (quotes and backslashes escaped).",
            resources: [
                "dict.js": .dictionary(name: "main", useAsDictionary: #"match="{base}app.*.js", id="lab:{run} \"quoted\" back\\slash""#, cacheControl: "max-age=3600"),
                "app.probe.js": .content(name: "probe"),
                "app.v2.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register", kind: .fetch, resource: "dict.js", expect: "store the dictionary with its id"),
                Step(name: "probe", kind: .probe(dictionary: "main"), resource: "app.probe.js", expect: "name the dictionary once stored",
                     checks: [.names(dictionary: "main")]),
                Step(name: "use", kind: .fetch, resource: "app.v2.js", report: true,
                     expect: "Dictionary-ID: the id as an sf-string, and the delta decoded",
                     checks: [.names(dictionary: "main"), .echoesID(dictionaryID), .decoded(content: "app")]),
            ]),
        Scenario(
            id: "match-dest", title: "match-dest honoured", rfc: "RFC 9842 §2.1.2, §2.2.3",
            checks: "A dictionary with match-dest=(\"script\") is named for script loads of a matching URL and never for fetch() (destination \"\").",
            resources: [
                "dict.js": .dictionary(name: "main", useAsDictionary: #"match="{base}lib.*.js", match-dest=("script")"#, cacheControl: "max-age=3600"),
                "lib.probe.js": .content(name: "probe"),
                "lib.fetch.js": .content(name: "app"),
                "lib.v2.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register", kind: .fetch, resource: "dict.js", expect: "store the dictionary (match-dest script)"),
                Step(name: "probe", kind: .probe(dictionary: "main"), resource: "lib.probe.js", destination: "script",
                     expect: "name the dictionary for a script load once stored", checks: [.names(dictionary: "main")]),
                Step(name: "fetch", kind: .fetch, resource: "lib.fetch.js", expect: "fetch() (destination \"\"): no Available-Dictionary, no dcb/dcz",
                     checks: [.namesNone, .offersNoDictionaryCodings]),
                Step(name: "script", kind: .fetch, resource: "lib.v2.js", destination: "script",
                     expect: "script load: the dictionary named, dcb/dcz offered",
                     checks: [.names(dictionary: "main"), .offersDictionaryCodings]),
            ]),
        Scenario(
            id: "match-dest-precedence", title: "match-dest beats a longer match", rfc: "RFC 9842 §2.2.3 (rule 1)",
            checks: "Of two matching dictionaries, the one whose match-dest names the request's destination wins over a longer match without match-dest that was fetched later.",
            resources: [
                "dest.dict.js": .dictionary(name: "dest", useAsDictionary: #"match="{base}*", match-dest=("script")"#, cacheControl: "max-age=3600"),
                "plain.dict.js": .dictionary(name: "plain", useAsDictionary: #"match="{base}lib/*""#, cacheControl: "max-age=3600"),
                "solo.js": .content(name: "probe"),
                "lib/probe.js": .content(name: "probe"),
                "lib/app.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register-dest", kind: .fetch, resource: "dest.dict.js", expect: "store the match-dest=(\"script\") dictionary"),
                Step(name: "register-plain", kind: .fetch, resource: "plain.dict.js", expect: "store the longer, later dictionary"),
                Step(name: "probe-dest", kind: .probe(dictionary: "dest"), resource: "solo.js", destination: "script",
                     expect: "name the match-dest dictionary for a script load", checks: [.names(dictionary: "dest")]),
                Step(name: "probe-plain", kind: .probe(dictionary: "plain"), resource: "lib/probe.js",
                     expect: "name the plain dictionary for fetch()", checks: [.names(dictionary: "plain")]),
                Step(name: "use", kind: .fetch, resource: "lib/app.js", destination: "script",
                     expect: "script load matched by both: the match-dest dictionary named",
                     checks: [.names(dictionary: "dest")]),
            ]),
        Scenario(
            id: "expired", title: "Expired dictionary not named", rfc: "RFC 9842 §2.2.2; RFC 9111 §4.2",
            checks: "A dictionary whose freshness lifetime (Cache-Control: max-age=6) has passed is no longer named, and dcb/dcz are no longer offered for it.",
            resources: [
                "dict.js": .dictionary(name: "main", useAsDictionary: #"match="{base}app.*.js""#, cacheControl: "max-age=6"),
                "app.probe.js": .content(name: "probe"),
                "app.v2.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register", kind: .fetch, resource: "dict.js", expect: "store the dictionary (max-age=6)"),
                Step(name: "probe", kind: .probe(dictionary: "main"), resource: "app.probe.js",
                     expect: "name it while fresh", checks: [.names(dictionary: "main")]),
                Step(name: "use", kind: .fetch, resource: "app.v2.js", report: true,
                     expect: "after the wait: no Available-Dictionary, no dcb/dcz",
                     checks: [.cameAfter(step: "register", seconds: 6), .namesNone, .offersNoDictionaryCodings, .decoded(content: "app")]),
            ]),
        Scenario(
            id: "stale-while-revalidate", title: "stale-while-revalidate dictionary still named", rfc: "RFC 9842 §2.2.2; RFC 5861 §3",
            checks: "A dictionary served with max-age=1, stale-while-revalidate=3600 is still named after max-age passed.",
            resources: [
                "dict.js": .dictionary(name: "main", useAsDictionary: #"match="{base}app.*.js""#, cacheControl: "max-age=1, stale-while-revalidate=3600"),
                "app.probe.js": .content(name: "probe"),
                "app.v2.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register", kind: .fetch, resource: "dict.js", expect: "store the dictionary (max-age=1, stale-while-revalidate=3600)"),
                Step(name: "probe", kind: .probe(dictionary: "main"), resource: "app.probe.js",
                     expect: "name it", checks: [.names(dictionary: "main")]),
                Step(name: "use", kind: .fetch, resource: "app.v2.js", report: true,
                     expect: "after the wait (stale, within stale-while-revalidate): still named, delta decoded",
                     checks: [.cameAfter(step: "register", seconds: 2), .names(dictionary: "main"), .decoded(content: "app")]),
            ]),
        Scenario(
            id: "no-store", title: "no-store / no-cache responses not registered", rfc: "RFC 9842 §2.1; RFC 9111 §5.2.2.4, §5.2.2.5",
            checks: "Use-As-Dictionary on a Cache-Control: no-store or no-cache response (even with max-age) does not create a dictionary.",
            resources: [
                "nostore.dict.js": .dictionary(name: "nostore", useAsDictionary: #"match="{base}a.*.js""#, cacheControl: "no-store, max-age=3600"),
                "nocache.dict.js": .dictionary(name: "nocache", useAsDictionary: #"match="{base}b.*.js""#, cacheControl: "no-cache, max-age=3600"),
                "control.dict.js": .dictionary(name: "control", useAsDictionary: #"match="{base}c.*.js""#, cacheControl: "max-age=3600"),
                "c.probe.js": .content(name: "probe"),
                "a.v2.js": .content(name: "app"),
                "b.v2.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register-no-store", kind: .fetch, resource: "nostore.dict.js", expect: "do not store (no-store)"),
                Step(name: "register-no-cache", kind: .fetch, resource: "nocache.dict.js", expect: "do not store (no-cache)"),
                Step(name: "register-control", kind: .fetch, resource: "control.dict.js", expect: "store this one (control)"),
                Step(name: "probe", kind: .probe(dictionary: "control"), resource: "c.probe.js",
                     expect: "name the control dictionary (registration works)", checks: [.names(dictionary: "control")]),
                Step(name: "use-no-store", kind: .fetch, resource: "a.v2.js", expect: "no Available-Dictionary",
                     checks: [.namesNone]),
                Step(name: "use-no-cache", kind: .fetch, resource: "b.v2.js", expect: "no Available-Dictionary",
                     checks: [.namesNone]),
            ]),
        Scenario(
            id: "longest-match", title: "The longest match wins", rfc: "RFC 9842 §2.2.3 (rule 2)",
            checks: "Of two matching dictionaries, the one with the longer match string is named even though the shorter one was fetched later.",
            resources: [
                "long.dict.js": .dictionary(name: "long", useAsDictionary: #"match="{base}app/*.js""#, cacheControl: "max-age=3600"),
                "short.dict.js": .dictionary(name: "short", useAsDictionary: #"match="{base}*""#, cacheControl: "max-age=3600"),
                "other.js": .content(name: "probe"),
                "app/probe.js": .content(name: "probe"),
                "app/main.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register-long", kind: .fetch, resource: "long.dict.js", expect: "store the longer-match dictionary"),
                Step(name: "register-short", kind: .fetch, resource: "short.dict.js", expect: "store the shorter-match dictionary (fetched later)"),
                Step(name: "probe-short", kind: .probe(dictionary: "short"), resource: "other.js",
                     expect: "name the short dictionary where only it matches", checks: [.names(dictionary: "short")]),
                Step(name: "probe-long", kind: .probe(dictionary: "long"), resource: "app/probe.js",
                     expect: "name the long dictionary where both match", checks: [.names(dictionary: "long")]),
                Step(name: "use", kind: .fetch, resource: "app/main.js", report: true,
                     expect: "the longer match named, delta decoded",
                     checks: [.names(dictionary: "long"), .decoded(content: "app")]),
            ]),
        Scenario(
            id: "single-available-dictionary", title: "Only one Available-Dictionary", rfc: "RFC 9842 §2.2",
            checks: "With two matching dictionaries the request carries exactly one Available-Dictionary field holding one sf-binary hash.",
            resources: [
                "a.dict.js": .dictionary(name: "a", useAsDictionary: #"match="{base}*""#, cacheControl: "max-age=3600"),
                "b.dict.js": .dictionary(name: "b", useAsDictionary: #"match="{base}x/*""#, cacheControl: "max-age=3600"),
                "x/probe.js": .content(name: "probe"),
                "x/app.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "register-a", kind: .fetch, resource: "a.dict.js", expect: "store dictionary a"),
                Step(name: "register-b", kind: .fetch, resource: "b.dict.js", expect: "store dictionary b"),
                Step(name: "probe", kind: .probe(dictionary: "b"), resource: "x/probe.js", expect: "name a dictionary",
                     checks: [.namesAny]),
                Step(name: "use", kind: .fetch, resource: "x/app.js", report: true,
                     expect: "exactly one Available-Dictionary with one hash; delta decoded",
                     checks: [.singleAvailableDictionary, .decoded(content: "app")]),
            ]),
        Scenario(
            id: "codings-with-dictionary", title: "dcb/dcz offered only with a dictionary", rfc: "RFC 9842 §6.1",
            checks: "dcb and dcz appear in Accept-Encoding when (and only when) the request names a dictionary.",
            resources: [
                "dict.js": .dictionary(name: "main", useAsDictionary: #"match="{base}app.*.js""#, cacheControl: "max-age=3600"),
                "app.probe.js": .content(name: "probe"),
                "app.v1.js": .content(name: "app"),
                "app.v2.js": .content(name: "app"),
                "unmatched.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "before", kind: .fetch, resource: "app.v1.js", expect: "nothing stored yet: no dcb/dcz",
                     checks: [.namesNone, .offersNoDictionaryCodings]),
                Step(name: "register", kind: .fetch, resource: "dict.js", expect: "store the dictionary"),
                Step(name: "probe", kind: .probe(dictionary: "main"), resource: "app.probe.js", expect: "name the dictionary once stored",
                     checks: [.names(dictionary: "main")]),
                Step(name: "matched", kind: .fetch, resource: "app.v2.js", expect: "dictionary named: dcb/dcz offered",
                     checks: [.names(dictionary: "main"), .offersDictionaryCodings]),
                Step(name: "unmatched", kind: .fetch, resource: "unmatched.js", expect: "no dictionary matches: no dcb/dcz",
                     checks: [.namesNone, .offersNoDictionaryCodings]),
            ]),
        Scenario(
            id: "wrong-hash", title: "dcz/dcb naming the wrong dictionary rejected", rfc: "RFC 9842 §4, §5, §9.3",
            checks: "A dcz/dcb body whose header names another dictionary than the one advertised is refused (an error), never shown.",
            resources: [
                "dict.js": .dictionary(name: "main", useAsDictionary: #"match="{base}app.*.js""#, cacheControl: "max-age=3600"),
                "app.probe.js": .content(name: "probe"),
                "app.v2.js": .wrongHash(content: "app"),
            ],
            steps: [
                Step(name: "register", kind: .fetch, resource: "dict.js", expect: "store the dictionary"),
                Step(name: "probe", kind: .probe(dictionary: "main"), resource: "app.probe.js", expect: "name the dictionary once stored",
                     checks: [.names(dictionary: "main")]),
                Step(name: "use", kind: .fetch, resource: "app.v2.js", report: true,
                     expect: "the response names another dictionary: report an error, not a body",
                     checks: [.names(dictionary: "main"), .rejected]),
            ]),
        Scenario(
            id: "link", title: "Link dictionary fetched and used", rfc: "RFC 9842 §3",
            checks: "A page with Link: <dict>; rel=\"compression-dictionary\" makes the client fetch that dictionary on its own and name it later.",
            resources: [
                "page.html": .page(link: "linked.dict.js"),
                "linked.dict.js": .dictionary(name: "linked", useAsDictionary: #"match="{base}app.*.js""#, cacheControl: "max-age=3600"),
                "app.probe.js": .content(name: "probe"),
                "app.v2.js": .content(name: "app"),
            ],
            steps: [
                Step(name: "page", kind: .page, resource: "page.html", destination: "document",
                     expect: "follow the Link header: fetch linked.dict.js", checks: [.fetched(resource: "linked.dict.js")]),
                Step(name: "probe", kind: .probe(dictionary: "linked"), resource: "app.probe.js", expect: "name the linked dictionary once stored",
                     checks: [.names(dictionary: "linked")]),
                Step(name: "use", kind: .fetch, resource: "app.v2.js", report: true,
                     expect: "the linked dictionary named, delta decoded",
                     checks: [.names(dictionary: "linked"), .decoded(content: "app")]),
            ]),
    ]

    /// Plan order: scenario by scenario, except that `expired` and `stale-while-revalidate` register
    /// first and share one wait before their `use` steps. `expired`'s max-age=6 leaves a slow
    /// (asynchronous) client 5+ s to store and name the dictionary before it runs out.
    static let lifetimeWait = 7.5
    static func orderedSteps() -> [(scenario: Scenario?, step: Step)] {
        var out: [(scenario: Scenario?, step: Step)] = []
        var deferred: [(scenario: Scenario?, step: Step)] = []
        for scenario in scenarios {
            let waits = scenario.id == "expired" || scenario.id == "stale-while-revalidate"
            for step in scenario.steps {
                if waits, step.name == "use" { deferred.append((scenario, step)) } else { out.append((scenario, step)) }
            }
            if scenario.id == "stale-while-revalidate" {
                out.append((nil, Step(name: "lifetimes-wait", kind: .wait(seconds: lifetimeWait),
                                      expect: "wait \(lifetimeWait) s: expired's max-age=6 and stale-while-revalidate's max-age=1 pass")))
                out += deferred
                deferred = []
            }
        }
        return out
    }

    static func scenario(_ id: String) -> Scenario? { scenarios.first { $0.id == id } }
}

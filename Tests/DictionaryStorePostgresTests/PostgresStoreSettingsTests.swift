@testable import DictionaryStorePostgres
import DictionaryCodec
import DictionaryTransport
import Foundation
import Testing
import TestSupport

@Suite struct PostgresStoreSettingsTests {
    @Test func parsesAFullURL() throws {
        let s = try PostgresStoreSettings(url: "postgres://app%20user:p%40ss@db.example:6543/dicts?sslmode=require")
        #expect(s.host == "db.example" && s.port == 6543 && s.database == "dicts")
        #expect(s.username == "app user" && s.password == "p@ss" && s.tls == .require)
    }

    @Test func defaultsPortAndTLS() throws {
        let s = try PostgresStoreSettings(url: "postgresql://dcserve@127.0.0.1/dcserve")
        #expect(s.port == 5432 && s.password == nil && s.tls == .prefer)
    }

    @Test func descriptionNeverShowsThePassword() throws {
        let s = try PostgresStoreSettings(url: "postgres://u:sekrit@h:1/d")
        #expect(!s.description.contains("sekrit") && s.description.contains("postgres://u:***@h:1/d"))
        #expect(!"\(s)".contains("sekrit"))
    }

    @Test(arguments: [
        ("http://u@h/d", "not a PostgreSQL URL"), ("postgres://h/d", "no user"), ("postgres://u@h", "one database"),
        ("postgres://u@h/d/e", "one database"), ("postgres://u@h/d?sslmode=maybe", "sslmode"),
        ("postgres://u@h/d?application_name=x", "not supported"),
    ])
    func refusesBadURLs(_ url: String, _ reason: String) {
        #expect {
            _ = try PostgresStoreSettings(url: url)
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test func errorsDoNotRepeatThePassword() {
        #expect {
            _ = try PostgresStoreSettings(url: "postgres://u:sekrit@h/d?sslmode=bogus")
        } throws: { error in
            !"\(error)".contains("sekrit")
        }
    }
}

@Suite struct RetentionPlanTests {
    let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    func hash(_ n: UInt8) -> DictionaryHash { SHA256.hash([n]) }

    /// The rule: the per-rule count cap removes only expired dictionaries; fresh ones go only
    /// under the byte budget, least recently served first.
    @Test func expiredFirstThenBytesLeastRecentlyServedFirst() {
        let records: [RetentionPlan.Record] = [
            .init(hash: hash(1), rule: "a", byteSize: 10, lastServed: t0, expires: t0.addingTimeInterval(10)),
            .init(hash: hash(2), rule: "a", byteSize: 10, lastServed: t0.addingTimeInterval(5), expires: nil),
            .init(hash: hash(3), rule: "a", byteSize: 10, lastServed: t0.addingTimeInterval(6), expires: nil),
            .init(hash: hash(4), rule: "a", byteSize: 10, lastServed: t0.addingTimeInterval(7), expires: nil),
            .init(hash: hash(5), rule: "b", byteSize: 100, lastServed: t0.addingTimeInterval(1), expires: nil),
        ]
        let removals = RetentionPlan.removals(records, retention: DictionaryRetention(maxTotalBytes: 25, maxCountPerRule: 2,
                                                                                      keepPastExpiry: 5),
                                              now: t0.addingTimeInterval(20))
        #expect(removals == [
            DictionaryRemoval(hash: hash(1), reason: .expired), DictionaryRemoval(hash: hash(5), reason: .totalBytes),
            DictionaryRemoval(hash: hash(2), reason: .totalBytes),
        ])
    }

    @Test func nothingToRemoveWithinLimits() {
        let records: [RetentionPlan.Record] = [.init(hash: hash(1), rule: nil, byteSize: 10, lastServed: t0, expires: nil)]
        #expect(RetentionPlan.removals(records, retention: DictionaryRetention(maxTotalBytes: 10, maxCountPerRule: 1), now: t0).isEmpty)
    }
}

@Suite struct PostgresStoreSettingsFuzzTests {
    /// Mutated URLs (deterministic, bounded: 20 000 cases): parsing never crashes, and neither the
    /// description nor an error ever contains the password.
    @Test func mutatedURLsNeverCrashOrLeakThePassword() {
        let seed = Array("postgres://user:Zq9sekretZq9@db.example:5432/dcserve?sslmode=require".utf8)
        let alphabet = Array("%@:/?=&#[]. -_0aZ\u{7f}".utf8) + [0, 0xff]
        var rng = SplitMix64(seed: 0x5eed)
        for _ in 0..<20_000 {
            var bytes = seed
            for _ in 0..<(1 + Int(rng.next() % 4)) {
                let i = Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0: bytes[i] = alphabet[Int(rng.next() % UInt64(alphabet.count))]
                case 1: bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: i)
                default: if bytes.count > 1 { bytes.remove(at: i) }
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            do {
                let s = try PostgresStoreSettings(url: text)
                // Whatever was parsed as the password (mutations may move "sekret" into the user name).
                if let password = s.password, !password.isEmpty,
                   ![s.username, s.host, s.database].contains(where: { $0.contains(password) }) {
                    #expect(!s.description.contains(password), "\(text)")
                }
            } catch {
                #expect(!error.description.contains("sekret"), "\(text)")
            }
        }
    }
}


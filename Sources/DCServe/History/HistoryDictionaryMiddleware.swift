import DictionaryCodec
import DictionaryTransport
import Dispatch
import Foundation
import HTTPServer
import HTTPTypes

/// The HTTP side of history dictionaries. Sits inside the compression middleware, so
/// it sees identity bodies and its `Link` survives compression.
///
/// - A path of a history rule's group (`/api/chats/42/messages`): a GET 200 identity body is added
///   to the group's window (``HistoryDictionaryBuilder/collect``; never blocks), and the response
///   carries `Link: <dictionary URL>; rel="compression-dictionary"` for the group's current
///   dictionary (in the request's partition; not when the request already names it) — or, when this
///   body completed the group's first dictionary, for that one (published before `Link` goes out).
/// - A dictionary URL (``HistoryDictionaryURL``): the bytes with `Use-As-Dictionary` (match scoped
///   to the group, id naming it), `Cache-Control: max-age` = the time left until it expires
///   (`private` for a partitioned rule), an ETag and `Access-Control-Allow-Origin: *` — only when a
///   group of the request's partition holds it (and, in-scope form, it is that group's URL);
///   otherwise 404, the same answer as for a hash that never existed.
///
/// Immutable; thread-safe.
public struct HistoryDictionaryMiddleware: HTTPMiddleware {
    let history: HistoryDictionaries
    static let link = HTTPField.Name("Link")!

    public init(history: HistoryDictionaries) { self.history = history }

    public func handle(_ request: HTTPServerRequest, next: any HTTPHandler,
                       respond: @escaping @Sendable (consuming HTTPServerResponse) -> Void) {
        let path = request.pathWithoutQuery
        let rule = history.rules.historyRule(for: path)
        if let url = HistoryDictionaryURL.parse(path), url.groupPath == nil || rule != nil {
            // A known dictionary no longer in memory is read from the store (disk or PostgreSQL):
            // on the library's store-read threads, not on the event loop.
            if !history.library.isLoaded(url.hash), !history.index.members(of: url.hash, now: history.clock()).isEmpty {
                return history.library.storeReads.async {
                    respond(dictionaryResponse(request, hash: url.hash, groupPath: url.groupPath))
                }
            }
            return respond(dictionaryResponse(request, hash: url.hash, groupPath: url.groupPath))
        }
        // An ambiguous partition key: nothing collected, nothing offered.
        guard let rule, let group = rule.historyGroup, let value = group.value(in: path),
              let builder = history.builders[rule.name],
              let partition = history.partition(of: request.head.headerFields, rule: rule) else {
            return next.handle(request, respond: respond)
        }
        let method = request.method
        let key = HistoryDictionaryIndex.GroupKey(rule: rule.name, group: String(value), partition: partition)
        let current = history.index.current(key, now: history.clock())
        let named = AvailableDictionary.parse(request.head.headerFields).value?.hash
        next.handle(request) { (out: consuming HTTPServerResponse) in
            out.materializeHead()  // read field by field below
            var offered = current
            if method == .get, out.head.status == .ok, case .bytes(let body) = out.body, Self.collectable(rule, request, out, partition: partition),
               let first = builder.collect(body, groupValue: value, partition: partition) {
                offered = first  // early Link: this body completed the group's first dictionary
            }
            if let offered, offered.hash != named, method == .get || method == .head,
               out.head.status == .ok || out.head.status == .notModified {
                let url = HistoryDictionaryURL.path(for: offered.hash, groupPath: group.groupPath(value), pattern: offered.pattern)
                out.head.headerFields.append(HTTPField(name: Self.link, value: "<\(url)>; rel=\"compression-dictionary\""))
                history.metrics.offered(rule: rule.name)
            }
            respond(out)
        }
    }

    /// Whether a response may go into a window of `partition`: identity-coded, transformable, and
    /// either the exchange carries no secrets, or the rule allows private responses, or it is a user's
    /// own partition (the anonymous one takes what a shared rule would: ``AnonymousPartitionSafeguard``).
    static func collectable(_ rule: DictionaryRuleSet.Rule, _ request: HTTPServerRequest, _ response: HTTPServerResponse,
                            partition: String) -> Bool {
        let fields = response.head.headerFields
        if let coding = fields[.contentEncoding], coding.lowercased() != "identity" { return false }
        if ProxyResponseHeaders.forbidsTransform(fields) { return false }
        if let key = rule.partition {
            guard partition == PartitionID.anonymous.value, !rule.allowsPrivateWhenAnonymous else { return true }
            return AnonymousPartitionSafeguard.concern(request: request.head.headerFields, response: fields, key: key) == nil
        }
        return rule.allowPrivate || CompressionEligibility.privacyConcern(request: request.head.headerFields, response: fields) == nil
    }

    func dictionaryResponse(_ request: HTTPServerRequest, hash: DictionaryHash, groupPath: Substring?) -> HTTPServerResponse {
        guard request.method == .get || request.method == .head else {
            return .text(.methodNotAllowed, "405 Method Not Allowed: dictionaries are served to GET and HEAD\n",
                         headerFields: [.allow: "GET, HEAD"])
        }
        let now = history.clock()
        let members = history.index.members(of: hash, now: now)
        let found = members.first { m in
            guard let rule = history.rules.rules.first(where: { $0.name == m.key.rule }), let group = rule.historyGroup else { return false }
            if let groupPath, groupPath != group.groupPath(m.key.group) { return false }
            return history.partition(of: request.head.headerFields, rule: rule) == m.key.partition
        }
        guard let member = found, let rule = history.rules.rules.first(where: { $0.name == member.key.rule }),
              let dictionary = history.library.lookup(hash, partition: rule.partition == nil ? nil : member.key.partition)?
                  .dictionary else {
            if let rule = members.first?.key.rule { history.metrics.refused(rule: rule) }
            return Self.notFound
        }
        var fields = HTTPFields()
        fields[.contentType] = "application/octet-stream"
        let advertisement = UseAsDictionary(match: member.pattern.source, matchDestinations: rule.matchDest,
                                            id: DictionaryID(member.id))
        guard let value = try? advertisement.fieldValue() else { return Self.notFound }
        fields[.useAsDictionary] = value
        let remaining = max(1, Int(member.expires.timeIntervalSince(now)))
        fields[.cacheControl] = rule.partition == nil ? "max-age=\(remaining)" : "private, max-age=\(remaining)"
        fields[.eTag] = "\"\(hash.hex)\""
        fields[.accessControlAllowOrigin] = "*"
        switch rule.partition {
        case .header(let name)?: fields[.vary] = name
        case .cookie?: fields[.vary] = "Cookie"
        default: break
        }
        history.metrics.fetched(rule: rule.name)
        if request.head.headerFields[values: .ifNoneMatch].contains(where: { ConditionalRequest.matches([$0], fields[.eTag]!) }) {
            fields[.contentType] = nil
            return HTTPServerResponse(status: .notModified, headerFields: fields)
        }
        // Not content-addressed on purpose: whether this path answers 200 depends on the requester.
        return HTTPServerResponse(status: .ok, headerFields: fields, body: .bytes(dictionary.bytes))
    }

    /// The answer for a dictionary URL this request may not have, whatever the reason (unknown hash,
    /// other partition, other group, expired): one body, so the URL alone reveals nothing.
    /// `private, no-store`: whether the URL answers depends on who asks, so no cache may keep the 404
    /// (a shared one would hand it to the dictionary's owner).
    static var notFound: HTTPServerResponse {
        .text(.notFound, "404 Not Found: no such dictionary\n", headerFields: [.cacheControl: "private, no-store"])
    }
}

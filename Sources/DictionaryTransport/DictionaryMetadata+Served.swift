import Foundation

extension DictionaryMetadata {
    /// Moves `lastServed` to `date`, and `expires` to `date + maxAge`, when `date` is at least a
    /// second after the current `lastServed` (records move in whole steps, so a busy dictionary is
    /// rewritten at most once a second). True when the record changed.
    ///
    /// Stores call it on the record in place (`noteServed(at:)` on `&index.values[i]`): reading
    /// `index.values[i].lastServed` through the getter copies the whole record (a dozen retains and
    /// releases), which on the cached-delta path cost several percent of a request.
    @inlinable
    public mutating func noteServed(at date: Date) -> Bool {
        guard date.timeIntervalSince(lastServed) >= 1 else { return false }
        lastServed = date
        if let maxAge { expires = date.addingTimeInterval(TimeInterval(maxAge)) }
        return true
    }
}

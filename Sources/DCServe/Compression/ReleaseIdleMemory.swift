extension DictionaryCompressionMiddleware {
    /// What the compression step gives back when traffic stops: its memoised responses and parsed
    /// header values (recomputed on the next request that needs them), and the live index moved into
    /// fresh storage (``LiveVersionIndex/compact()``). Any thread; requests may run meanwhile.
    func releaseIdleMemory() {
        memo.removeAll()
        availableDictionaries.removeAll()
        advertisements.removeAll()
        Self.usableSeconds.removeAll()
        Self.privateValues.removeAll()
        live.compact()
    }
}

// DictionaryTransport: RFC 9842 semantics (headers, URL patterns, negotiation, store, variant cache).

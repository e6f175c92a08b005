/// DictionaryTransport re-exports the portable RFC 9842 field models and URL patterns it shares with
/// the dictionary client, so its users keep seeing them through `import DictionaryTransport`.
@_exported import DictionaryTransportFields

/// DictionaryCodec re-exports the portable codec vocabulary (hash, coding tokens, frame header,
/// limits, errors) it shares with the dictionary client, so its users keep seeing it through
/// `import DictionaryCodec`.
@_exported import DictionaryCodecTypes

/// HTTPCore re-exports the portable field-value helpers and HTTP-date parser it shares with the
/// dictionary client, so its users keep seeing them through `import HTTPCore`.
@_exported import HTTPFieldValues

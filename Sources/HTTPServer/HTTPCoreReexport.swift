// HTTPServer's public API speaks HTTPCore's types (HTTPVersion, HTTPDate, TLSConfiguration,
// EventLoop, ...): importing HTTPServer brings them along.
@_exported import HTTPCore

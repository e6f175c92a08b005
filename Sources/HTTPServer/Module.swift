// HTTPServer: sockets + Dispatch, HTTP/1.1 parsing and writing. Knows nothing about dictionaries.

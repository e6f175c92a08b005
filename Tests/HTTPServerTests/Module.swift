// Tests for HTTPServer.

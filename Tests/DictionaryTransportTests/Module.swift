// Tests for DictionaryTransport.

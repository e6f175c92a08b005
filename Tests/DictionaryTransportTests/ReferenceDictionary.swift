import DictionaryCodec
import Foundation
import HTTPTypes

/// The SPEC.md §6 reference dictionary and its hash.
let referenceDictionary = Array("This is a test dictionary.\n".utf8)
let referenceHash = DictionaryHash(hex: "53969bcf5e960e0edbf0a4bdde6b0b3e9381e156de7f5b91ce8391624270f416")!
let referenceAvailableDictionary = ":U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=:"

import DictionaryCodec
import Foundation
import HTTPTypes

/// Builds header fields from (name, value) pairs; repeated names give repeated field lines.
func fields(_ pairs: (String, String)...) -> HTTPFields {
    var result = HTTPFields()
    for (name, value) in pairs { result.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
    return result
}

/// The SPEC.md §6 reference dictionary and its hash.
let referenceDictionary = Array("This is a test dictionary.\n".utf8)
let referenceHash = DictionaryHash(hex: "53969bcf5e960e0edbf0a4bdde6b0b3e9381e156de7f5b91ce8391624270f416")!
let referenceAvailableDictionary = ":U5abz16WDg7b8KS93msLPpOB4Vbef1uRzoORYkJw9BY=:"

/// A fresh empty directory under the system temporary directory; the caller removes it.
func makeTemporaryDirectory() -> String {
    let path = NSTemporaryDirectory() + "dcserve-transport-tests-" + UUID().uuidString
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

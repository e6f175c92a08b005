import HTTPTypes

extension DCServeConfiguration {
    /// `experiment.*`: a share in 0…1, a key that can identify a client, a valid field name.
    func validateExperiment() throws {
        let e = experiment
        guard e.controlShare.isFinite, (0...1).contains(e.controlShare) else {
            throw ConfigurationError(key: "experiment.controlShare", "must be a number from 0 to 1, not \(e.controlShare)")
        }
        if e.controlShare > 0 && e.key == nil {
            throw ConfigurationError(key: "experiment.key", "required when experiment.controlShare is set: {\"header\": NAME}, {\"cookie\": NAME} or {\"partition\": true}")
        }
        guard e.key != nil else { return }
        guard HTTPField.Name(e.groupHeader) != nil else {
            throw ConfigurationError(key: "experiment.groupHeader", "must be a field name (token characters), not \(e.groupHeader.debugDescription)")
        }
        switch e.key {
        case .header(let name)?:
            guard HTTPField.Name(name) != nil else {
                throw ConfigurationError(key: "experiment.key.header", "must be a field name, not \(name.debugDescription)")
            }
        case .cookie(let name)?:
            guard !name.isEmpty, !name.contains(where: { "=; ,\t".contains($0) }) else {
                throw ConfigurationError(key: "experiment.key.cookie", "must be a cookie name, not \(name.debugDescription)")
            }
        case .partition?:
            guard ExperimentKeySource(configuration: self) != nil else {
                throw ConfigurationError(key: "experiment.key.partition",
                                         "needs a rule partitioned by a request header or cookie (dictionaries.<rule>.partition)")
            }
        case nil: break
        }
    }
}

extension ConfigurationLoader {
    /// `experiment.controlShare`, `experiment.key.{partition,header,cookie}`, `experiment.groupHeader`.
    static func readExperiment(_ r: ConfigValues) throws -> ExperimentSettings {
        var e = ExperimentSettings()
        e.controlShare = try r.double("experiment.controlShare") ?? e.controlShare
        e.groupHeader = try r.string("experiment.groupHeader") ?? e.groupHeader
        var keys: [ExperimentSettings.Key] = []
        if try r.bool("experiment.key.partition") == true { keys.append(.partition) }
        if let name = try r.string("experiment.key.header") { keys.append(.header(name)) }
        if let name = try r.string("experiment.key.cookie") { keys.append(.cookie(name)) }
        guard keys.count <= 1 else {
            throw ConfigurationError(key: "experiment.key", "must name exactly one of partition, header, cookie")
        }
        e.key = keys.first
        return e
    }
}

/// The group of a response in the A/B switch.
public enum ExperimentGroup: String, Sendable, Hashable, CaseIterable {
    /// No dictionary transport at all: no `Use-As-Dictionary`, no dcb/dcz, no `Link`.
    case control
    /// Dictionary transport as configured.
    case dictionary
    /// Dictionary transport as configured, for a request without a client id: reported as
    /// `dictionary` in the response field, counted apart in the metrics (`group="unkeyed"`).
    case unkeyed

    /// The value of the group field (`DCServe-Group`) and of the access log's `group=`.
    public var fieldValue: String { self == .control ? "control" : "dictionary" }

    /// Whether the response gets dictionary transport.
    public var usesDictionaries: Bool { self != .control }
}

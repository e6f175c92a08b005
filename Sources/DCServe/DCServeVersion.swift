/// dcserve's own version, printed by `dcserve --version` and sent in the `Server` header.
public enum DCServeVersion {
    public static let string = "0.1.0"
}

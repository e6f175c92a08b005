/// Fetch destinations (the values of `Sec-Fetch-Dest` / `Request.destination`, WHATWG Fetch) a
/// `match-dest` may name. `""` is the destination of `fetch()`/XHR and the default for a client that
/// is not a browser. Unknown names in `match-dest` are dropped at registration (Chromium's behaviour).
public enum FetchDestination {
    public static let known: Set<String> = [
        "", "audio", "audioworklet", "document", "embed", "font", "frame", "iframe", "image", "json",
        "manifest", "object", "paintworklet", "report", "script", "serviceworker", "sharedworker",
        "style", "track", "video", "webidentity", "worker", "xslt",
    ]
}

/// The `Content-Type` an image answer may carry, for servers that send bytes read back from a
/// cache: a stored type is bytes from disk, and one that says `text/html` or `image/svg+xml`
/// (both can run script) must not make the server's origin serve a page.
package enum ServedImageType {
    /// The image types sent as they are stored.
    package static let servable: Set<String> = ["image/png", "image/jpeg", "image/gif", "image/webp", "image/avif"]

    /// The `Content-Type` to send for a stored `contentType`: the stored one when its media type
    /// (before any parameter, in any case) is one of ``servable``, else
    /// `application/octet-stream` (with `nosniff`, the browser then guesses nothing either).
    package static func contentType(for contentType: String) -> String {
        let mediaType = String(contentType.prefix { $0 != ";" }.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed()).lowercased()
        return servable.contains(mediaType) ? contentType : "application/octet-stream"
    }
}

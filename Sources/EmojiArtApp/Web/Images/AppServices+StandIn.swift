import ImageCache

extension AppServices {
    /// What a request for `kind`, in a format slow to encode and not made yet, is answered with
    /// meanwhile: the same variant in the best other format the client accepts whose bytes are
    /// made (in memory or on disk), else in PNG (made now, as quick as a PNG-only app's first
    /// request). `nil` when the piece has no plan (it left the feed in between).
    func standIn(for kind: VariantKind, accept: String?, piece: Int?, version: Substring?) -> ImageLoad? {
        var offered = formats.filter { $0 != kind.format }
        while true {
            // PNG when nothing left is accepted, and PNG is always offered: this ends.
            let format = ServedFormat.negotiate(accept, offered: offered)
            let candidate = VariantKind(route: kind.route, density: kind.density, format: format)
            guard case let .load(load) = plan(candidate, piece: piece, version: version) else { return nil }
            if format.isQuickToEncode || pipeline.isCached(load.request) { return load }
            offered.removeAll { $0 == format }
        }
    }
}

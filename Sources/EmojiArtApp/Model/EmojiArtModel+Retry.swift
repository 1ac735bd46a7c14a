import Foundation
import ImageCache
import Synchronization

/// Retry (`POST /retry`, which the page offers to anyone): one for everyone, never at the
/// expense of the catalog others are looking at.
extension EmojiArtModel {
    /// What `POST /retry` does, for whichever client asks. With no catalog yet (the feed failed
    /// or is still loading) it is the whole load again (``start(retryingFailures:)``, whose
    /// loading page is all there is to show), joined by every retry while it runs. With a
    /// catalog, a retry joins the one under way, if any (``sharedRetries``); else, in the
    /// background, it checks the feed as catalog loads do (``refreshIfFeedChanged()``: at most
    /// once per ``feedCheckInterval``, sharing a check under way), right away only when the stored
    /// feed failed its last check (not re-authenticated, or the gallery unreachable), then
    /// verifies again the entries that failed (missing, failed, mismatched, not cached), their
    /// remembered failures forgotten, while the catalog keeps being served and updates as each
    /// finishes. Returns at once; ``waitUntilRetried()`` waits for the end.
    public func retry() {
        guard phase.value == .ready else {
            start(retryingFailures: true)
            return
        }
        guard retryRun == nil else {
            sharedRetries.update { $0 += 1 }
            return
        }
        retryRun = Task {
            await self.retryWithCatalog()
            self.retryRun = nil
        }
    }

    /// Waits for the retry under way (``retry()``) and the run it may have started, if any.
    public func waitUntilRetried() async {
        await retryRun?.value
        await run?.value
    }

    /// A retry while a catalog is shown: the feed check, then the failed entries again.
    private func retryWithCatalog() async {
        let storedFeedFailed = feedOrigin.value.map { $0.isNotReauthenticated || $0.isGalleryUnreachable } ?? false
        // A new feed: its own verification covers every entry.
        if await refreshIfFeedChanged(ignoringInterval: storedFeedFailed) { return }
        let edition = feedEditions
        let failed = statuses.indices.filter { statuses[$0] != .verified && statuses[$0] != .pending }
        await verify(failed, retryingFailures: true) { index, status in
            // A feed adopted meanwhile (a page load's check) has statuses of its own.
            guard feedEditions == edition else { return }
            let before = statuses[index]
            statuses[index] = status
            catalogEdits.add(1, ordering: .releasing)
            progress.update { $0.replace(before, with: status) }
        }
    }
}

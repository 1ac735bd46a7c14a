import ArgumentParser
import EmojiArtApp
import Foundation
import ImageCache
import Synchronization

/// Remembers the highest step printed, so plain output prints each tenth once.
final class LockedCounter: Sendable {
    private let value = Mutex(-1)
    func advance(to step: Int) -> Bool {
        value.withLock { current in
            guard step > current else { return false }
            current = step
            return true
        }
    }
}

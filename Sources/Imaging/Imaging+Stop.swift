import CVips

extension Imaging {
    /// When one ``Imaging/process(_:operations:encoding:stop:_:)`` gives up: a time limit counted
    /// from the stop's making, and ``cancel()``, which any thread may call (a request whose
    /// client left). libvips checks both every few scanlines while it computes (its "eval"
    /// signal), so a blur of a large image or an AVIF encode ends within moments of either,
    /// with ``Imaging/Error/timedOut(limit:)`` or ``Imaging/Error/cancelled``.
    ///
    /// `Sendable` though a class: its state is a C struct written once when made (the deadline)
    /// and otherwise read and written only with GLib's atomic operations (the flag).
    public final class Stop: @unchecked Sendable {
        let state: UnsafeMutablePointer<CVipsStop>
        /// The time limit it was made with.
        public let limit: Duration

        /// A stop `limit` from now.
        public init(after limit: Duration) {
            let micros = limit.components.seconds * 1_000_000 + limit.components.attoseconds / 1_000_000_000_000
            state = .allocate(capacity: 1)
            state.initialize(to: CVipsStop(deadline: cvips_monotonic_now() + Int(max(0, micros)), cancelled: 0))
            self.limit = limit
        }

        deinit {
            state.deallocate()
        }

        /// Stops the work at libvips' next check.
        public func cancel() {
            cvips_stop_cancel(state)
        }

        /// Whether ``cancel()`` was called.
        public var isCancelled: Bool { cvips_stop_is_cancelled(state) != 0 }

        /// Whether the time limit has passed.
        public var hasExpired: Bool { cvips_monotonic_now() > state.pointee.deadline }

        /// Has libvips report `image`'s computation to this stop.
        func watch(_ image: VipsImage) {
            cvips_watch(image.pointer, state)
        }

        /// The error for work this stop ended, or `nil` when it did not end it.
        var error: Imaging.Error? {
            isCancelled ? .cancelled : hasExpired ? .timedOut(limit: limit) : nil
        }
    }
}

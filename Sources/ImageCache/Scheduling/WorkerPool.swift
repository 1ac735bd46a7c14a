import NIOPosix
import Synchronization

/// Threads of the pipeline's own for blocking work (processing, `fsync`): NIO's
/// `NIOThreadPool`, started on first use and shut down when the pool goes away, so a loader that
/// never processes anything starts no thread.
///
/// Two ways in:
/// - ``run(_:)`` runs a synchronous closure on a worker thread (disk writes);
/// - as a `TaskExecutor` (`withTaskExecutorPreference(pool) { … }`), the async code of a
///   processor runs on the worker threads: its synchronous CPU work (a libvips call) blocks a
///   worker, never one of Swift's cooperative threads.
///
/// The pipeline's bookkeeping admits at most as much work as there are threads, so work never
/// queues here. Thread-safe; once started, reaching the pool costs an atomic load, no lock.
final class WorkerPool: TaskExecutor, Sendable {
    let name: String
    let threads: Int
    /// The started pool, retained once stored (released in `deinit`).
    private let pool = Atomic<Unmanaged<NIOThreadPool>?>(nil)

    init(name: String, threads: Int) {
        self.name = name
        self.threads = max(1, threads)
    }

    /// The running pool, started on first use. Two first users at once may both start one; the
    /// one stored first wins and the other is shut down unused.
    private var started: NIOThreadPool {
        if let pool = pool.load(ordering: .acquiring) { return pool.takeUnretainedValue() }
        let started = NIOThreadPool(numberOfThreads: threads)
        started.start()
        let retained = Unmanaged.passRetained(started)
        let (stored, winner) = pool.compareExchange(expected: nil, desired: retained, ordering: .acquiringAndReleasing)
        guard !stored, let winner else { return started }
        retained.release()
        started.shutdownGracefully { _ in }
        return winner.takeUnretainedValue()
    }

    /// Runs `body` on a worker thread and returns its result.
    func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await started.runIfActive(body)
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        started.submit { _ in
            // Run even when the pool is shutting down: a job that never runs is a task that never
            // ends (it cannot happen while a pipeline holds the pool, which shuts it down only
            // when it is gone).
            job.runSynchronously(on: executor)
        }
    }

    deinit {
        guard let pool = pool.load(ordering: .acquiring) else { return }
        pool.takeUnretainedValue().shutdownGracefully { _ in }
        pool.release()
    }
}

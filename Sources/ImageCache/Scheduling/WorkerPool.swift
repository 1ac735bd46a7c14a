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
/// The scheduler admits at most as much work as there are threads, so work never queues here.
/// Thread-safe.
final class WorkerPool: TaskExecutor, Sendable {
    let name: String
    let threads: Int
    private let pool = Mutex<NIOThreadPool?>(nil)

    init(name: String, threads: Int) {
        self.name = name
        self.threads = max(1, threads)
    }

    /// The running pool, started on first use.
    private var started: NIOThreadPool {
        pool.withLock { pool in
            if let pool { return pool }
            let started = NIOThreadPool(numberOfThreads: threads)
            started.start()
            pool = started
            return started
        }
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
        pool.withLock { $0 }?.shutdownGracefully { _ in }
    }
}

import NIOPosix
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

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
///
/// A pool for background work is *nice* (``isNice``): on Linux each of its threads lowers its
/// own scheduling priority to nice 19 before it runs anything, so the kernel gives the processor
/// to every other thread of the machine first (a nice-19 thread competing with a nice-0 one gets
/// about 1.5% of the core). Threads a job starts inherit it (libheif's AV1 encoder threads).
/// Elsewhere the pool is an ordinary one: only Linux keeps a nice value per thread.
final class WorkerPool: TaskExecutor, Sendable {
    let name: String
    let threads: Int
    /// Whether the threads run at the lowest scheduling priority (nice 19, Linux).
    let isNice: Bool
    /// The started pool, retained once stored (released in `deinit`).
    private let pool = Atomic<Unmanaged<NIOThreadPool>?>(nil)

    init(name: String, threads: Int, nice: Bool = false) {
        self.name = name
        self.threads = max(1, threads)
        isNice = nice
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
        try await started.runIfActive { [isNice] in
            if isNice { Self.lowerThisThreadsPriority() }
            return try body()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        let isNice = isNice
        started.submit { _ in
            if isNice { Self.lowerThisThreadsPriority() }
            // Run even when the pool is shutting down: a job that never runs is a task that never
            // ends (it cannot happen while a pipeline holds the pool, which shuts it down only
            // when it is gone).
            job.runSynchronously(on: executor)
        }
    }

    /// Sets the calling thread's nice value to 19 (Linux; idempotent, one system call). Linux
    /// keeps the value per thread, and `PRIO_PROCESS` with `who` 0 names the calling thread. A
    /// thread may always lower its own priority, so this cannot fail for want of a privilege.
    static func lowerThisThreadsPriority() {
        #if os(Linux)
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, 19)
        #endif
    }

    deinit {
        guard let pool = pool.load(ordering: .acquiring) else { return }
        pool.takeUnretainedValue().shutdownGracefully { _ in }
        pool.release()
    }
}

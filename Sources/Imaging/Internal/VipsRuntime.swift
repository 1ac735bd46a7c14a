import CVips
import Foundation

/// Starts libvips exactly once, before any concurrent use (concurrent use of an unstarted
/// libvips aborts the process). A global `let` is initialised once, thread-safely, by Swift.
enum VipsRuntime {
    static let started: Result<Void, Imaging.Error> = {
        guard cvips_init("emojiart") == 0 else {
            return .failure(.libraryUnavailable(takeErrorMessage()))
        }
        // Every image is processed once: an operation cache only holds memory.
        vips_cache_set_max(0)
        vips_cache_set_max_mem(0)
        vips_cache_set_max_files(0)
        // One worker per pipeline unless the user says otherwise; see `Imaging`'s doc comment.
        if ProcessInfo.processInfo.environment["VIPS_CONCURRENCY"] == nil {
            vips_concurrency_set(1)
        }
        // SIMD only where it is compiled ahead of time. Up to 8.14 libvips' SIMD is liborc's
        // run-time compiled code: with many images resized at once on several threads, liborc
        // 0.4.33 crashed the process here (a SIGSEGV inside liborc during a thumbnail, 1 stress
        // run in 15), as it did for sharp, which shipped with it off for years. From 8.15 on it
        // is Highway's, compiled into the library: on, unless VIPS_NOVECTOR asks otherwise.
        let aheadOfTime = (version.0, version.1) >= (8, 15)
        if !aheadOfTime || ProcessInfo.processInfo.environment["VIPS_NOVECTOR"] == nil {
            vips_vector_set_enabled(aheadOfTime ? 1 : 0)
        }
        return .success(())
    }()

    /// The version of the libvips this process runs on (not the headers it was compiled with):
    /// major, minor, micro.
    static let version: (Int, Int, Int) = (
        Int(vips_version(0)), Int(vips_version(1)), Int(vips_version(2))
    )

    /// Takes libvips' error buffer and clears it, so one call's message never leaks into the
    /// next call's error. The buffer is process-global: under heavy concurrent failure another
    /// thread's line can still appear here, which is why errors are typed by the stage that
    /// failed and the libvips text is only detail.
    static func takeErrorMessage() -> String {
        guard let copy = vips_error_buffer_copy() else { return "no detail from libvips" }
        defer { cvips_free(copy) }
        let text = String(cString: copy).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? "no detail from libvips" : text.replacingOccurrences(of: "\n", with: "; ")
    }
}

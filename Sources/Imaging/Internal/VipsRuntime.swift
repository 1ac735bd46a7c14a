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
        // No run-time compiled SIMD (liborc): with many images resized at once on several
        // threads, liborc 0.4.33 crashed the process here once (a SIGSEGV inside liborc during a
        // thumbnail, seen in a CI run), as it did for sharp, which shipped with it off for years.
        // It costs a fifth of the single-thread speed of a resize; a crash costs more.
        vips_vector_set_enabled(0)
        return .success(())
    }()

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

// LLVM's profile runtime, present only in a build with code coverage (swift build
// --enable-code-coverage; scripts/trace): weak, so any other build links and reports it absent.
// PathTraceTests counts which of the project's functions one request runs with it. And the counts
// of scripts/trace-hooks.c (actor hops, global enqueues, contended mutexes), when scripts/trace
// preloads it.
#include <dlfcn.h>
#include <stdint.h>

extern void __llvm_profile_reset_counters(void) __attribute__((weak));
extern int __llvm_profile_write_file(void) __attribute__((weak));
extern void __llvm_profile_set_filename(const char *name) __attribute__((weak));

/// Whether this process counts executions (a build with code coverage).
static inline int emojiart_profile_available(void) {
    return __llvm_profile_reset_counters != 0 && __llvm_profile_write_file != 0 && __llvm_profile_set_filename != 0;
}

/// Sets every execution count to zero.
static inline void emojiart_profile_reset(void) {
    if (__llvm_profile_reset_counters) __llvm_profile_reset_counters();
}

/// Writes the counts so far to `path`, then points the write at exit to `after` (so it does not
/// overwrite `path`); 0 on success.
static inline int emojiart_profile_write(const char *path, const char *after) {
    if (!__llvm_profile_set_filename || !__llvm_profile_write_file) return -1;
    __llvm_profile_set_filename(path);
    int status = __llvm_profile_write_file();
    __llvm_profile_set_filename(after);
    return status;
}

/// The counts scripts/trace-hooks.c keeps (its `struct emojiart_trace_counts`).
typedef struct {
    uint64_t magic;
    /// Calls of `swift_task_switch`: each hop to an executor the compiled code runs.
    uint64_t task_switches;
    /// Jobs enqueued on the global concurrent executor.
    uint64_t global_enqueues;
    /// `Synchronization.Mutex` takes that found the mutex held.
    uint64_t contended_locks;
    /// Heap allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc, memalign).
    uint64_t allocations;
    uint64_t reserved[3];
} emojiart_trace_hook_counts;

/// The hooks' counts now; all zero with `magic` 0 when the hooks are not preloaded.
static inline emojiart_trace_hook_counts emojiart_trace_hooks_read(void) {
    emojiart_trace_hook_counts none = {0};
    // RTLD_DEFAULT (0 in glibc): the process's global scope, where a preloaded library is.
    void *symbol = dlsym((void *)0, "emojiart_trace_counts");
    if (!symbol) return none;
    emojiart_trace_hook_counts *counts = ((emojiart_trace_hook_counts *(*)(void))symbol)();
    emojiart_trace_hook_counts now = {
        .magic = counts->magic,
        .task_switches = __atomic_load_n(&counts->task_switches, __ATOMIC_RELAXED),
        .global_enqueues = __atomic_load_n(&counts->global_enqueues, __ATOMIC_RELAXED),
        .contended_locks = __atomic_load_n(&counts->contended_locks, __ATOMIC_RELAXED),
        .allocations = __atomic_load_n(&counts->allocations, __ATOMIC_RELAXED),
    };
    return now;
}

/// Sets the hooks' counts to zero (nothing when they are not preloaded).
static inline void emojiart_trace_hooks_reset(void) {
    void *symbol = dlsym((void *)0, "emojiart_trace_reset");
    if (symbol) ((void (*)(void))symbol)();
}

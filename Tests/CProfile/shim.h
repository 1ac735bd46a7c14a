// LLVM's profile runtime, present only in a build with code coverage (swift build
// --enable-code-coverage; scripts/trace): weak, so any other build links and reports it absent.
// PathTraceTests counts which of the project's functions one request runs with it.
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

// Counts what the Swift runtime does for synchronization that code coverage cannot see, in the
// process it is preloaded into (`LD_PRELOAD`; scripts/trace builds it with the toolchain's clang):
//
//   task_switches    calls of `swift_task_switch`: each `hop_to_executor` the compiled code runs
//                    (an actor hop, or the hop back after an await). Counted when called, whether
//                    the runtime then switches executors or finds the task already where it must
//                    run and goes on at once.
//   global_enqueues  jobs enqueued on the global concurrent executor (`swift_task_enqueueGlobal`,
//                    through the runtime's `swift_task_enqueueGlobal_hook`): tasks started or
//                    resumed on the cooperative pool, actors scheduled to run there.
//   contended_locks  `Synchronization.Mutex` lock takes that found the mutex held: calls of its
//                    slow path `_MutexHandle._lockSlow(_:)` (it spins, then sleeps in the kernel
//                    with FUTEX_LOCK_PI). An uncontended take is inlined into the caller and never
//                    reaches it.
//   allocations      heap allocations: calls of malloc, calloc, realloc, posix_memalign,
//                    aligned_alloc and memalign (the Swift runtime's swift_slowAlloc, and so every
//                    class instance, closure context and growing buffer, comes through these),
//                    as SwiftNIO's allocation-counter tests count them. Interposed in C, handing
//                    each call to glibc's own entry points (`__libc_malloc`, ...).
//
// Both functions are interposed by a trampoline that adds one to its counter and jumps to the
// real function (found with `dlsym(RTLD_NEXT, ...)`), touching no register the call passes: they
// use Swift's calling conventions (`swift_task_switch` is `swiftasync`: its async context is in
// r14 or x22), which C cannot declare. The trampolines use only scratch registers that are not
// arguments in any convention (r11 on x86_64; x9, x16, x17 on aarch64).
//
// Read in the process with `dlsym(RTLD_DEFAULT, "emojiart_trace_counts")` (Tests/CProfile), or,
// with `EMOJIART_TRACE_COUNTS=FILE` in the environment, from FILE by another process: the counts
// then live in that file, mapped shared (created, or zeroed, by the first process to map it).
// Layout: eight little-endian uint64s, `magic` then the counts in the order of the struct below.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct emojiart_trace_counts {
    uint64_t magic;  // "EATRACE1"
    uint64_t task_switches;
    uint64_t global_enqueues;
    uint64_t contended_locks;
    uint64_t allocations;
    uint64_t reserved[3];
};

#define EMOJIART_TRACE_MAGIC 0x3145434152544145ull  // "EATRACE1", little-endian

static struct emojiart_trace_counts in_process = {.magic = EMOJIART_TRACE_MAGIC};

// Read by the trampolines: where the counts are, and the real functions.
__attribute__((visibility("hidden"))) struct emojiart_trace_counts *emojiart_trace_counts_at = &in_process;
__attribute__((visibility("hidden"))) void *emojiart_real_task_switch;
__attribute__((visibility("hidden"))) void *emojiart_real_lock_slow;

#define MUTEX_LOCK_SLOW "$s15Synchronization12_MutexHandleV9_lockSlowyys6UInt32VF"

// trampoline(NAME, OFFSET, REAL): adds 1 to the uint64 at OFFSET in the counts, then jumps to REAL.
#if defined(__x86_64__)
#define TRAMPOLINE(name, offset, real)                                   \
    __asm__(".text\n"                                                    \
            ".globl \"" name "\"\n"                                      \
            ".type \"" name "\", @function\n"                            \
            "\"" name "\":\n"                                            \
            "    movq emojiart_trace_counts_at(%rip), %r11\n"            \
            "    lock incq " #offset "(%r11)\n"                          \
            "    jmpq *" real "(%rip)\n"                                 \
            ".size \"" name "\", . - \"" name "\"\n");
#elif defined(__aarch64__)
// Assembled for aarch64 (clang --target=aarch64-linux-gnu), not run: no such machine here.
#define TRAMPOLINE(name, offset, real)                                   \
    __asm__(".text\n"                                                    \
            ".globl \"" name "\"\n"                                      \
            ".type \"" name "\", %function\n"                            \
            "\"" name "\":\n"                                            \
            "    adrp x16, emojiart_trace_counts_at\n"                   \
            "    ldr x16, [x16, :lo12:emojiart_trace_counts_at]\n"       \
            "    add x16, x16, #" #offset "\n"                           \
            "1:  ldxr x17, [x16]\n"                                      \
            "    add x17, x17, #1\n"                                     \
            "    stxr w9, x17, [x16]\n"                                  \
            "    cbnz w9, 1b\n"                                          \
            "    adrp x16, " real "\n"                                   \
            "    ldr x16, [x16, :lo12:" real "]\n"                       \
            "    br x16\n"                                               \
            ".size \"" name "\", . - \"" name "\"\n");
#else
#error "scripts/trace-hooks.c has trampolines for x86_64 and aarch64 only"
#endif

TRAMPOLINE("swift_task_switch", 8, "emojiart_real_task_switch")
TRAMPOLINE(MUTEX_LOCK_SLOW, 24, "emojiart_real_lock_slow")

// The global executor's hook (swift/Runtime/Concurrency.h): called with the job and the
// runtime's own enqueue, in Swift's calling convention.
typedef void (*enqueue_original)(void *job) __attribute__((swiftcall));
typedef void (*enqueue_hook)(void *job, enqueue_original original) __attribute__((swiftcall));
static enqueue_hook previous_hook;

__attribute__((swiftcall)) static void count_enqueue(void *job, enqueue_original original) {
    __atomic_fetch_add(&emojiart_trace_counts_at->global_enqueues, 1, __ATOMIC_RELAXED);
    if (previous_hook) {
        previous_hook(job, original);
    } else {
        original(job);
    }
}

// Heap allocations, counted and handed to glibc (whose `__libc_*` entry points need no dlsym,
// which itself allocates). Freeing is not counted.
extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void *__libc_memalign(size_t alignment, size_t size);

static inline void count_allocation(void) {
    __atomic_fetch_add(&emojiart_trace_counts_at->allocations, 1, __ATOMIC_RELAXED);
}

void *malloc(size_t size) {
    count_allocation();
    return __libc_malloc(size);
}

void *calloc(size_t count, size_t size) {
    count_allocation();
    return __libc_calloc(count, size);
}

void *realloc(void *pointer, size_t size) {
    count_allocation();
    return __libc_realloc(pointer, size);
}

void *memalign(size_t alignment, size_t size) {
    count_allocation();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count_allocation();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **out, size_t alignment, size_t size) {
    // posix_memalign's own checks: a power of two, a multiple of the pointer size.
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0) return 22;  // EINVAL
    count_allocation();
    void *pointer = __libc_memalign(alignment, size);
    if (!pointer) return 12;  // ENOMEM
    *out = pointer;
    return 0;
}

// Counts in a file other processes read, when EMOJIART_TRACE_COUNTS names one.
static void map_counts_file(void) {
    const char *path = getenv("EMOJIART_TRACE_COUNTS");
    if (!path || !*path) return;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return;
    struct emojiart_trace_counts *shared = MAP_FAILED;
    if (ftruncate(fd, sizeof *shared) == 0) {
        shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    close(fd);
    if (shared == MAP_FAILED) return;
    if (shared->magic != EMOJIART_TRACE_MAGIC) {
        memset(shared, 0, sizeof *shared);
        shared->magic = EMOJIART_TRACE_MAGIC;
    }
    emojiart_trace_counts_at = shared;
}

// Before `main`: no Swift task runs earlier. A process without the Swift runtime (a shell, nginx)
// finds neither function and never calls the trampolines.
__attribute__((constructor)) static void install(void) {
    emojiart_real_task_switch = dlsym(RTLD_NEXT, "swift_task_switch");
    emojiart_real_lock_slow = dlsym(RTLD_NEXT, MUTEX_LOCK_SLOW);
    map_counts_file();
    enqueue_hook *hook = dlsym(RTLD_NEXT, "swift_task_enqueueGlobal_hook");
    if (hook) {
        previous_hook = *hook;
        *hook = count_enqueue;
    }
}

/// The counts of this process (or of the file they are kept in).
struct emojiart_trace_counts *emojiart_trace_counts(void) {
    return emojiart_trace_counts_at;
}

/// Sets every count to zero.
void emojiart_trace_reset(void) {
    __atomic_store_n(&emojiart_trace_counts_at->task_switches, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&emojiart_trace_counts_at->global_enqueues, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&emojiart_trace_counts_at->contended_locks, 0, __ATOMIC_RELAXED);
    __atomic_store_n(&emojiart_trace_counts_at->allocations, 0, __ATOMIC_RELAXED);
}

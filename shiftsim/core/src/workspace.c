/* Checked working memory for the kernels: every allocation the core makes while computing goes through
 * core_malloc / core_calloc / core_free, within a scope that an entry point (or one case of a batch) opens.
 *
 * A failed allocation never returns NULL to a kernel: it jumps back to the innermost open scope of its thread
 * (CORE_GUARD), which frees every block still allocated in it, so the entry point can raise MemoryError and
 * nothing leaks. Scopes nest (a Python callback may call the core again); a block belongs to the scope open
 * when it was allocated. A debug hook fails the n-th allocation from now, and live blocks are counted, so
 * tests can fail each allocation in turn and check that nothing is left behind.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

/* Under AddressSanitizer (make check-c) the workspace's free part is poisoned: an array read or written after its
 * mark was released is reported as the heap misuse it is, although the block itself is still allocated. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(address, size) ((void)(address), (void)(size))
#define ASAN_UNPOISON_MEMORY_REGION(address, size) ((void)(address), (void)(size))
#endif

static __thread CoreScope *innermost;     /* this thread's innermost open scope */
static int64_t fail_countdown;            /* debug hook: the allocation that brings it to 0 fails (0: off) */
static int64_t live_blocks;               /* blocks allocated and not yet freed, every thread */

void core_scope_open(CoreScope *scope) {
    scope->head.prev = scope->head.next = &scope->head;
    scope->outer = innermost;
    innermost = scope;
}

void core_scope_close(CoreScope *scope) { innermost = scope->outer; }

void core_scope_unwind(CoreScope *scope) {
    for (CoreBlock *block = scope->head.next; block != &scope->head;) {
        CoreBlock *next = block->next;
        free(block);
        __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
        block = next;
    }
    innermost = scope->outer;
}

static int64_t allocations, overflows; /* every thread: allocations made, workspace requests beyond the size */
static size_t workspace_cap;          /* debug hook: workspaces no larger than this many bytes (0: as sized) */

static void *allocate(size_t size, int zero) {
    __atomic_add_fetch(&allocations, 1, __ATOMIC_RELAXED);
    int fail = __atomic_load_n(&fail_countdown, __ATOMIC_RELAXED) > 0
               && __atomic_sub_fetch(&fail_countdown, 1, __ATOMIC_RELAXED) == 0;
    CoreBlock *block = fail || size > SIZE_MAX - sizeof(CoreBlock) ? NULL
                       : zero ? calloc(1, sizeof(CoreBlock) + size) : malloc(sizeof(CoreBlock) + size);
    CoreScope *scope = innermost;
    if (!block) {
        if (scope) longjmp(scope->jump, 1);
        abort(); /* every entry point opens a scope first: an allocation outside one is a bug in api.c */
    }
    block->prev = &scope->head, block->next = scope->head.next;
    scope->head.next->prev = block, scope->head.next = block;
    __atomic_add_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
    return block + 1;
}

void *core_malloc(size_t size) { return allocate(size, 0); }

void *core_calloc(size_t count, size_t size) {
    if (size && count > SIZE_MAX / size) return allocate(SIZE_MAX, 1); /* overflow: fails like any other */
    return allocate(count * size, 1);
}

void core_free(void *memory) {
    if (!memory) return;
    CoreBlock *block = (CoreBlock *)memory - 1;
    block->prev->next = block->next, block->next->prev = block->prev;
    free(block);
    __atomic_sub_fetch(&live_blocks, 1, __ATOMIC_RELAXED);
}

void core_fail_allocation(int64_t n) { __atomic_store_n(&fail_countdown, n, __ATOMIC_RELAXED); }

int64_t core_live_blocks(void) { return __atomic_load_n(&live_blocks, __ATOMIC_RELAXED); }

/* ------------------------------------------------------------------ the workspace */
struct WorkspaceOverflow {
    WorkspaceOverflow *next;
    size_t mark; /* the workspace's ``used`` when it was taken */
    int64_t padding;
};

#define ALIGNMENT 16

static size_t aligned(size_t bytes) { return (bytes + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT; }

void workspace_open(Workspace *w, size_t bytes) {
    size_t cap = __atomic_load_n(&workspace_cap, __ATOMIC_RELAXED);
    w->memory = NULL, w->used = 0, w->overflow = NULL;
    w->size = bytes > SIZE_MAX - ALIGNMENT ? SIZE_MAX : aligned(cap && bytes > cap ? cap : bytes);
    w->memory = core_malloc(w->size ? w->size : ALIGNMENT);
    ASAN_POISON_MEMORY_REGION(w->memory, w->size);
}

void workspace_close(Workspace *w) {
    ws_release(w, 0);
    ASAN_UNPOISON_MEMORY_REGION(w->memory, w->size);
    core_free(w->memory);
    w->memory = NULL, w->size = 0;
}

void workspace_forget(Workspace *w) { w->used = 0, w->overflow = NULL; }

size_t ws_mark(const Workspace *w) { return w->used; }

void ws_release(Workspace *w, size_t mark) {
    while (w->overflow && w->overflow->mark >= mark) {
        WorkspaceOverflow *next = w->overflow->next;
        core_free(w->overflow);
        w->overflow = next;
    }
    if (mark < w->size) ASAN_POISON_MEMORY_REGION(w->memory + mark, (w->used < w->size ? w->used : w->size) - mark);
    w->used = mark;
}

/* ``bytes`` (aligned) from the workspace: the next free bytes of its block, or past its end (counted) a block of
 * their own; the offsets go on counting past the end, so that releasing a mark frees exactly the blocks taken since. */
static void *take(Workspace *w, size_t bytes) {
    bytes = aligned(bytes ? bytes : 1);
    if (bytes <= w->size && w->used <= w->size - bytes && !w->overflow) {
        void *memory = w->memory + w->used;
        w->used += bytes;
        ASAN_UNPOISON_MEMORY_REGION(memory, bytes);
        return memory;
    }
    __atomic_add_fetch(&overflows, 1, __ATOMIC_RELAXED);
    WorkspaceOverflow *block = core_malloc(bytes > SIZE_MAX / 2 ? SIZE_MAX : sizeof(WorkspaceOverflow) + bytes);
    block->next = w->overflow, block->mark = w->used;
    w->overflow = block;
    w->used += bytes;
    return block + 1;
}

double *ws_doubles(Workspace *w, int64_t n) {
    size_t count = n > 0 ? (size_t)n : 0;
    if (count > SIZE_MAX / sizeof(double) - ALIGNMENT) count = SIZE_MAX / sizeof(double) - ALIGNMENT; /* fails */
    double *memory = take(w, count * sizeof(double));
    memset(memory, 0, count * sizeof(double));
    return memory;
}

int64_t *ws_indices(Workspace *w, int64_t n) {
    size_t count = n > 0 ? (size_t)n : 0;
    if (count > SIZE_MAX / sizeof(int64_t) - ALIGNMENT) count = SIZE_MAX / sizeof(int64_t) - ALIGNMENT;
    return take(w, count * sizeof(int64_t));
}

int64_t core_workspace_overflows(void) { return __atomic_load_n(&overflows, __ATOMIC_RELAXED); }

void core_cap_workspaces(size_t bytes) { __atomic_store_n(&workspace_cap, bytes, __ATOMIC_RELAXED); }

int64_t core_allocations(void) { return __atomic_load_n(&allocations, __ATOMIC_RELAXED); }

/* The largest of kinematics (a state), the force terms (a pair spring's or a joint load's (nq, nq) Hessian and
 * Jacobians, gravity's node sums) and the ground's terms, with room for alignment. */
size_t kernel_workspace_doubles(const Model *model) {
    size_t n = (size_t)model->n_nodes, nq = (size_t)model->nq, closures = (size_t)model->n_closures;
    return 24 * n + 6 * nq + nq * nq + 20 * nq + 12 * n + 6 * n + 6 * closures + 256;
}

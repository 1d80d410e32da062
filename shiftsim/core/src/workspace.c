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

static void *allocate(size_t size, int zero) {
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

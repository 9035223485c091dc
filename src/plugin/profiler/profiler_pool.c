/* Event pools: fixed arrays of event slots per communicator context (plus one process-wide
 * pool for PXN events of other processes), with a lock-free free list (Treiber stack with
 * an ABA tag in the head word). Allocation never calls malloc; an exhausted pool drops the
 * event and counts it. Each slot carries a generation (odd = live) that is part of the
 * handle token, so a handle that outlived its event never matches the slot's next life. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/profiler/profiler.h"

static _Atomic(struct profiler_pool *) pool_table[PROFILER_MAX_POOLS];

/* token: bit0 = 1, bit1 = 0 (event), bits 2..21 slot, 22..33 pool, 34..63 generation */
uint64_t profiler_event_token(const struct profiler_pool *p, const struct profiler_event *e)
{
	uint64_t slot = (uint64_t)(e - p->slots);
	uint64_t gen = atomic_load_explicit(&((struct profiler_event *)e)->gen,
					    memory_order_relaxed) & PROFILER_GEN_MASK;
	return 1u | (slot << 2) | ((uint64_t)p->index << 22) | (gen << 34);
}

int profiler_pool_init(struct profiler_pool *p, uint32_t index, uint32_t cap)
{
	if (cap == 0 || cap > PROFILER_MAX_SLOTS || index >= PROFILER_MAX_POOLS)
		return -EINVAL;
	/* calloc: pages are touched only as slots get used */
	struct profiler_event *slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	p->slots = slots;
	p->cap = cap;
	p->index = index;
	for (uint32_t i = 0; i < cap; i++)
		atomic_store_explicit(&slots[i].next, i + 2 <= cap ? i + 2 : 0,
				      memory_order_relaxed);
	atomic_store_explicit(&p->head, 1, memory_order_release); /* tag 0, slot 0 */
	atomic_store_explicit(&p->in_use, 0, memory_order_relaxed);
	atomic_store_explicit(&p->dropped, 0, memory_order_relaxed);
	return 0;
}

void profiler_pool_destroy(struct profiler_pool *p)
{
	free(p->slots);
	p->slots = NULL;
	p->cap = 0;
}

void profiler_pool_register(struct profiler_pool *p)
{
	atomic_store_explicit(&pool_table[p->index], p, memory_order_release);
}

struct profiler_event *profiler_pool_alloc(struct profiler_pool *p)
{
	uint64_t head = atomic_load_explicit(&p->head, memory_order_acquire);
	for (;;) {
		uint32_t idx1 = (uint32_t)head;
		if (idx1 == 0) {
			atomic_fetch_add_explicit(&p->dropped, 1, memory_order_relaxed);
			return NULL;
		}
		struct profiler_event *e = &p->slots[idx1 - 1];
		uint32_t next = atomic_load_explicit(&e->next, memory_order_relaxed);
		uint64_t nhead = ((head >> 32) + 1) << 32 | next;
		if (atomic_compare_exchange_weak_explicit(&p->head, &head, nhead,
							  memory_order_acq_rel,
							  memory_order_acquire)) {
			uint32_t g = atomic_load_explicit(&e->gen, memory_order_relaxed);
			atomic_store_explicit(&e->gen, (g + 1) & PROFILER_GEN_MASK,
					      memory_order_release);
			atomic_fetch_add_explicit(&p->in_use, 1, memory_order_relaxed);
			return e;
		}
	}
}

static void pool_push(struct profiler_pool *p, struct profiler_event *e)
{
	uint32_t idx1 = (uint32_t)(e - p->slots) + 1;
	uint64_t head = atomic_load_explicit(&p->head, memory_order_acquire);
	for (;;) {
		atomic_store_explicit(&e->next, (uint32_t)head, memory_order_relaxed);
		uint64_t nhead = ((head >> 32) + 1) << 32 | idx1;
		if (atomic_compare_exchange_weak_explicit(&p->head, &head, nhead,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return;
	}
}

bool profiler_pool_free(struct profiler_pool *p, struct profiler_event *e, uint64_t token)
{
	uint32_t g = (uint32_t)(token >> 34) & PROFILER_GEN_MASK;
	if (!(g & 1))
		return false;
	uint32_t expect = g;
	if (!atomic_compare_exchange_strong_explicit(&e->gen, &expect,
						     (g + 1) & PROFILER_GEN_MASK,
						     memory_order_acq_rel, memory_order_relaxed))
		return false; /* not live with this token: already freed (double stop) */
	atomic_fetch_sub_explicit(&p->in_use, 1, memory_order_relaxed);
	pool_push(p, e);
	return true;
}

uint32_t profiler_pool_sweep(struct profiler_pool *p)
{
	uint32_t n = 0;
	for (uint32_t i = 0; i < p->cap; i++) {
		struct profiler_event *e = &p->slots[i];
		uint32_t g = atomic_load_explicit(&e->gen, memory_order_acquire);
		if (!(g & 1))
			continue;
		uint64_t tok = profiler_event_token(p, e);
		if (((uint32_t)(tok >> 34) & PROFILER_GEN_MASK) == g && profiler_pool_free(p, e, tok))
			n++;
	}
	return n;
}

struct profiler_event *profiler_event_decode(uint64_t token)
{
	if (!profiler_is_event_token(token))
		return NULL;
	uint32_t slot = (uint32_t)(token >> 2) & (PROFILER_MAX_SLOTS - 1);
	uint32_t pidx = (uint32_t)(token >> 22) & (PROFILER_MAX_POOLS - 1);
	uint32_t gen = (uint32_t)(token >> 34) & PROFILER_GEN_MASK;
	struct profiler_pool *p = atomic_load_explicit(&pool_table[pidx], memory_order_acquire);
	if (!p || slot >= p->cap || !(gen & 1))
		return NULL;
	struct profiler_event *e = &p->slots[slot];
	if ((atomic_load_explicit(&e->gen, memory_order_acquire) & PROFILER_GEN_MASK) != gen)
		return NULL;
	return e;
}

struct profiler_pool *profiler_pool_of(const struct profiler_event *e)
{
	uint32_t pidx = (uint32_t)(e->token >> 22) & (PROFILER_MAX_POOLS - 1);
	return atomic_load_explicit(&pool_table[pidx], memory_order_acquire);
}

/* Learned channel count per communicator (comm_channels.h): a fixed open-addressing table
 * keyed by comm_id with relaxed atomics. Writers claim an empty key slot with a CAS, then
 * raise the stored count with a CAS-max; readers never block. The table never shrinks
 * (communicators of one process are few); when full, new communicators are not learned
 * and the tuner falls back to "unknown" (0). */
#include <stdatomic.h>
#include <stddef.h>

#include "plugin/comm_channels.h"

#define CC_SLOTS 1024 /* power of two */

struct cc_slot {
	_Atomic uint64_t key; /* cc_key(comm_id), 0 = empty */
	_Atomic int n;
};

static struct cc_slot cc_table[CC_SLOTS];

/* 0 marks an empty slot; comm_id 0 (tuner ABI v3/v4, unknown hash) maps to a fixed key. */
static uint64_t cc_key(uint64_t comm_id)
{
	return comm_id ? comm_id : 0x9e3779b97f4a7c15ull;
}

static size_t cc_hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (CC_SLOTS - 1);
}

void comm_channels_record(uint64_t comm_id, int n)
{
	if (n < 1 || n > 64)
		return;
	uint64_t k = cc_key(comm_id);
	size_t h = cc_hash(k);
	for (size_t i = 0; i < CC_SLOTS; i++) {
		struct cc_slot *s = &cc_table[(h + i) & (CC_SLOTS - 1)];
		uint64_t cur = atomic_load_explicit(&s->key, memory_order_acquire);
		if (cur == 0) {
			uint64_t expect = 0;
			if (!atomic_compare_exchange_strong_explicit(&s->key, &expect, k,
								     memory_order_acq_rel,
								     memory_order_acquire) &&
			    expect != k)
				continue;
			cur = k;
		}
		if (cur != k)
			continue;
		int old = atomic_load_explicit(&s->n, memory_order_relaxed);
		while (n > old && !atomic_compare_exchange_weak_explicit(
					  &s->n, &old, n, memory_order_release, memory_order_relaxed))
			;
		return;
	}
}

int comm_channels_get(uint64_t comm_id)
{
	uint64_t k = cc_key(comm_id);
	size_t h = cc_hash(k);
	for (size_t i = 0; i < CC_SLOTS; i++) {
		struct cc_slot *s = &cc_table[(h + i) & (CC_SLOTS - 1)];
		uint64_t cur = atomic_load_explicit(&s->key, memory_order_acquire);
		if (cur == 0)
			return 0;
		if (cur == k)
			return atomic_load_explicit(&s->n, memory_order_acquire);
	}
	return 0;
}

void comm_channels_reset(void)
{
	for (size_t i = 0; i < CC_SLOTS; i++) {
		atomic_store_explicit(&cc_table[i].n, 0, memory_order_relaxed);
		atomic_store_explicit(&cc_table[i].key, 0, memory_order_release);
	}
}

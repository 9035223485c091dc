/* Decision provenance: source names and the policy id table (decision_src.h). The table is
 * a fixed open-addressing array keyed by (chain version, program index): claimed with a
 * CAS, the label copied in, then marked ready; it never shrinks (a process publishes few
 * chains: one per reload). */
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtime/decision_src.h"

static const char *const dsrc_names[NB_DSRC_COUNT] = {
	"unknown", "nccl", "policy", "pinned", "env", "call", "fallback", "inner"};

const char *nb_dsrc_name(unsigned src)
{
	return src < NB_DSRC_COUNT ? dsrc_names[src] : dsrc_names[0];
}

int nb_dsrc_from_name(const char *s, size_t len)
{
	for (int i = 0; i < NB_DSRC_COUNT; i++)
		if (strlen(dsrc_names[i]) == len && !memcmp(s, dsrc_names[i], len))
			return i;
	return -1;
}

#define LABEL_MAX 112

struct policy_ent {
	_Atomic uint64_t key; /* 1 << 63 | version << 8 | index; 0 = empty */
	_Atomic uint32_t ready;
	uint64_t version;
	char label[LABEL_MAX];
};

static struct policy_ent ids[NB_POLICY_IDS]; /* slot 0 unused: id 0 = none */
static _Atomic uint64_t ids_full;

uint32_t nb_policy_id(uint64_t version, uint32_t index, const char *label)
{
	if (index > 255)
		index = 255;
	uint64_t key = 1ull << 63 | (version & 0x00ffffffffffffffull) << 8 | index;
	uint64_t h = key * 0x9e3779b97f4a7c15ull;
	const uint32_t n = NB_POLICY_IDS - 1;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t slot = 1 + (uint32_t)((h >> 40) + i) % n;
		struct policy_ent *e = &ids[slot];
		uint64_t k = atomic_load_explicit(&e->key, memory_order_acquire);
		if (k == key)
			return slot;
		if (k)
			continue;
		uint64_t zero = 0;
		if (!atomic_compare_exchange_strong_explicit(&e->key, &zero, key,
							     memory_order_acq_rel,
							     memory_order_acquire)) {
			if (zero == key)
				return slot;
			continue;
		}
		e->version = version;
		size_t l = 0;
		for (; label && label[l] && l < LABEL_MAX - 1; l++)
			e->label[l] = label[l];
		e->label[l] = 0;
		atomic_store_explicit(&e->ready, 1, memory_order_release);
		return slot;
	}
	atomic_fetch_add_explicit(&ids_full, 1, memory_order_relaxed);
	return 0;
}

const char *nb_policy_name(uint32_t id, char *buf, size_t len)
{
	if (!len)
		return buf;
	buf[0] = 0;
	if (id == 0 || id >= NB_POLICY_IDS ||
	    !atomic_load_explicit(&ids[id].ready, memory_order_acquire))
		return buf;
	snprintf(buf, len, "%s@%" PRIu64, ids[id].label, ids[id].version);
	return buf;
}

uint64_t nb_policy_ids_full(void)
{
	return atomic_load_explicit(&ids_full, memory_order_relaxed);
}

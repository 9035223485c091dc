/* Decision provenance from the tuner to the profiler (provenance.h). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "ncclbpf/policy.h"
#include "plugin/provenance.h"

#define PROV_MAX 1024 /* blocks (communicators of one process); power of two */

struct prov_slot {
	_Atomic uint64_t key; /* seq + 1, 0 = being written / empty */
	_Atomic uint64_t val; /* low 32 bits of n_bytes << 32 | policy << 8 | src */
};

struct prov_comm {
	uint64_t comm_id;
	int refs; /* tuner communicators using it, under lock */
	struct prov_slot ring[NCCLBPF_NUM_COLLS][PROV_SLOTS];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
/* comm_id -> block, published with a release store; readers probe without the lock */
static struct {
	_Atomic uint64_t key;
	struct prov_comm *_Atomic block;
} table[PROV_MAX];
static _Atomic uint64_t n_found, n_misses;

static size_t hash(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (PROV_MAX - 1);
}

struct prov_comm *prov_comm_open(uint64_t comm_id)
{
	if (!comm_id)
		return NULL;
	struct prov_comm *p = NULL;
	pthread_mutex_lock(&lock);
	size_t h = hash(comm_id);
	for (size_t i = 0; i < PROV_MAX; i++) {
		size_t s = (h + i) & (PROV_MAX - 1);
		uint64_t k = atomic_load_explicit(&table[s].key, memory_order_relaxed);
		if (k && k != comm_id)
			continue;
		p = atomic_load_explicit(&table[s].block, memory_order_relaxed);
		if (!p) {
			p = calloc(1, sizeof(*p));
			if (!p)
				break;
			p->comm_id = comm_id;
			atomic_store_explicit(&table[s].block, p, memory_order_release);
			atomic_store_explicit(&table[s].key, comm_id, memory_order_release);
		} else if (!p->refs) {
			/* a closed block of a communicator with the same hash: start clean */
			for (int c = 0; c < NCCLBPF_NUM_COLLS; c++)
				for (int j = 0; j < PROV_SLOTS; j++)
					atomic_store_explicit(&p->ring[c][j].key, 0,
							      memory_order_relaxed);
		}
		p->refs++;
		break;
	}
	pthread_mutex_unlock(&lock);
	return p;
}

void prov_comm_close(struct prov_comm *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&lock);
	if (p->refs > 0)
		p->refs--;
	pthread_mutex_unlock(&lock);
}

void prov_record(struct prov_comm *p, unsigned coll, uint64_t seq, uint64_t n_bytes,
		 unsigned src, uint32_t policy)
{
	if (!p || coll >= NCCLBPF_NUM_COLLS)
		return;
	struct prov_slot *s = &p->ring[coll][seq & (PROV_SLOTS - 1)];
	/* a sequence-checked pair: the key is cleared while the value changes */
	atomic_store_explicit(&s->key, 0, memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit(&s->val,
			      (uint64_t)(uint32_t)n_bytes << 32 | (uint64_t)(policy & 0xffffffu) << 8 |
				      (src & 0xffu),
			      memory_order_relaxed);
	atomic_store_explicit(&s->key, seq + 1, memory_order_release);
}

static struct prov_comm *find(uint64_t comm_id)
{
	size_t h = hash(comm_id);
	for (size_t i = 0; i < PROV_MAX; i++) {
		size_t s = (h + i) & (PROV_MAX - 1);
		uint64_t k = atomic_load_explicit(&table[s].key, memory_order_acquire);
		if (!k)
			return NULL;
		if (k == comm_id)
			return atomic_load_explicit(&table[s].block, memory_order_acquire);
	}
	return NULL;
}

bool prov_lookup(uint64_t comm_id, unsigned coll, uint64_t seq, uint64_t n_bytes,
		 unsigned *src, uint32_t *policy)
{
	*src = NB_DSRC_UNKNOWN;
	*policy = 0;
	if (!comm_id || coll >= NCCLBPF_NUM_COLLS)
		return false;
	struct prov_comm *p = find(comm_id);
	if (!p)
		return false;
	struct prov_slot *s = &p->ring[coll][seq & (PROV_SLOTS - 1)];
	uint64_t k1 = atomic_load_explicit(&s->key, memory_order_acquire);
	uint64_t v = atomic_load_explicit(&s->val, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	uint64_t k2 = atomic_load_explicit(&s->key, memory_order_relaxed);
	if (k1 != seq + 1 || k2 != k1 || (uint32_t)(v >> 32) != (uint32_t)n_bytes) {
		atomic_fetch_add_explicit(&n_misses, 1, memory_order_relaxed);
		return false;
	}
	*src = (unsigned)(v & 0xffu) < NB_DSRC_COUNT ? (unsigned)(v & 0xffu) : NB_DSRC_UNKNOWN;
	*policy = (uint32_t)(v >> 8) & 0xffffffu;
	atomic_fetch_add_explicit(&n_found, 1, memory_order_relaxed);
	return true;
}

void prov_get_counters(struct prov_counters *out)
{
	out->found = atomic_load_explicit(&n_found, memory_order_relaxed);
	out->misses = atomic_load_explicit(&n_misses, memory_order_relaxed);
}

void prov_reset_for_tests(void)
{
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < PROV_MAX; i++) {
		struct prov_comm *p = atomic_load(&table[i].block);
		if (p) {
			p->refs = 0;
			for (int c = 0; c < NCCLBPF_NUM_COLLS; c++)
				for (int j = 0; j < PROV_SLOTS; j++)
					atomic_store(&p->ring[c][j].key, 0);
		}
	}
	atomic_store(&n_found, 0);
	atomic_store(&n_misses, 0);
	pthread_mutex_unlock(&lock);
}

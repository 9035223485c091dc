/* maps module internals: the map object, the per-type entry points the dispatcher in
 * map.c calls, the hash element pool, and the epoch machinery (epoch.c). Only
 * the maps sources and white-box tests include this. */
#ifndef NCCLBPF_MAPS_MAP_INTERNAL_H
#define NCCLBPF_MAPS_MAP_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "maps/map.h"

#define MAP_ROUND8(x) (((size_t)(x) + 7u) & ~(size_t)7u)
/* Largest storage block one map allocates (array values, hash element pool). map_spec_check
 * refuses larger maps before anything is allocated. */
#define MAP_STORAGE_LIMIT (1ull << 32)
#define MAP_HASH_MAX_ENTRIES (1u << 31)
#define MAP_LIKELY(x) __builtin_expect(!!(x), 1)
#define MAP_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- epoch-based reclamation (epoch.c) ---- */

/* Something that holds retired memory and can give it back once readers are gone (one
 * per hash map). map_epoch_reclaim() walks all registered domains. */
struct map_epoch_domain {
	struct map_epoch_domain *prev, *next;
	void (*reclaim)(struct map_epoch_domain *d);
};
void map_epoch_domain_register(struct map_epoch_domain *d);
void map_epoch_domain_unregister(struct map_epoch_domain *d);
/* Called after an element was unlinked: returns the tag to retire it with and advances
 * the global epoch, so that readers that start later carry a newer epoch. */
uint64_t map_epoch_retire_tag(void);
/* Smallest epoch of any thread currently inside a critical section (UINT64_MAX if none).
 * Memory retired with tag < result is unreachable by every reader. */
uint64_t map_epoch_min_active(void);
/* True if the calling thread is inside map_epoch_enter/exit. */
bool map_epoch_in_section(void);
/* Number of thread records ever allocated (records are reused after thread exit). */
size_t map_epoch_record_count(void);

/* ---- spinlock for hash buckets (writers only; short critical sections) ---- */
typedef struct {
	atomic_uint v;
} map_spinlock_t;
void map_spin_lock(map_spinlock_t *l);
static inline void map_spin_unlock(map_spinlock_t *l)
{
	atomic_store_explicit(&l->v, 0, memory_order_release);
}

/* ---- hash elements and their preallocated pool ---- */
struct map_elem {
	_Atomic(struct map_elem *) next; /* bucket chain, read lock-free by lookups */
	uint32_t hash;
	atomic_uint lru_ref;             /* LRU: set by lookups, cleared by eviction scan */
	struct map_elem *lru_prev;       /* LRU list, under the map's LRU lock */
	struct map_elem *lru_next;
	atomic_uint free_next;           /* freelist: index+1 of next free element, 0 = end */
	uint32_t index;                  /* own index in the pool */
	struct map_elem *retire_next;    /* retired list */
	uint64_t retire_epoch;
	/* followed by key (rounded to 8) then value (rounded to 8) */
	uint64_t data[];
};

struct map_bucket {
	_Atomic(struct map_elem *) head;
	map_spinlock_t lock;
};

struct nb_map {
	/* read on every lookup: keep together */
	uint32_t type;
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;
	uint8_t *array_base;      /* array: entry i at array_base + i * stride */
	uint32_t stride;          /* array: value_size rounded to 8; hash: element size */
	uint32_t bucket_mask;     /* hash: n_buckets - 1 */
	struct map_bucket *buckets;
	uint32_t key_off_value;   /* hash: offset of the value from data[] (key rounded to 8) */
	uint32_t map_flags;
	char *name;
	int agreed_slot;          /* agreed maps: registry slot, else -1 */
	uint8_t *agreed_zero;     /* agreed maps: the all-zero view (reads when unbound) */

	/* hash: element pool */
	uint8_t *pool;            /* n_elems elements of `stride` bytes */
	uint32_t n_elems;         /* max_entries + slack (retired-but-not-yet-free elements) */
	_Atomic uint64_t free_head; /* (generation << 32) | (index + 1) */
	atomic_uint count;        /* live elements */
	_Atomic(struct map_elem *) retired; /* waiting for readers to leave */
	atomic_uint n_retired;
	uint32_t reclaim_threshold;
	pthread_mutex_t reclaim_lock;
	struct map_epoch_domain domain;

	/* LRU: all writers serialise on lru_lock (as the kernel's common LRU lock) */
	pthread_mutex_t lru_lock;
	struct map_elem *lru_head; /* most recently used */
	struct map_elem *lru_tail; /* eviction candidate */
};

static inline struct map_elem *map_elem_at(const struct nb_map *m, uint32_t idx)
{
	return (struct map_elem *)(m->pool + (size_t)idx * m->stride);
}
static inline void *map_elem_key(struct map_elem *e)
{
	return e->data;
}
static inline void *map_elem_value(const struct nb_map *m, struct map_elem *e)
{
	return (uint8_t *)e->data + m->key_off_value;
}

/* ---- array (map_array.c) ---- */
int map_array_init(struct nb_map *m, char *err, size_t errlen);
void map_array_destroy(struct nb_map *m);
static inline void *map_array_lookup(struct nb_map *m, const void *key)
{
	uint32_t idx;

	__builtin_memcpy(&idx, key, sizeof(idx));
	if (MAP_UNLIKELY(idx >= m->max_entries))
		return NULL;
	return m->array_base + (size_t)idx * m->stride;
}
int map_array_update(struct nb_map *m, const void *key, const void *value, uint64_t flags);
int map_array_get_next_key(struct nb_map *m, const void *key, void *next_key);

/* ---- hash table core (map_hash.c), shared by HASH and LRU_HASH ---- */
#define MAP_HASH_SEED 0x9e3779b97f4a7c15ull

static inline uint64_t map_hash_mix(uint64_t h)
{
	/* murmur3 fmix64 finaliser: good avalanche, a handful of cycles */
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* Fixed seed (like BPF_F_ZERO_SEED): reproducible iteration order across runs. */
static inline uint32_t map_hash_key_inline(const struct nb_map *m, const void *key)
{
	const uint8_t *p = key;
	uint32_t n = m->key_size;
	uint64_t h = MAP_HASH_SEED ^ n, w;

	if (MAP_LIKELY(n == 4)) {
		uint32_t k;
		__builtin_memcpy(&k, p, 4);
		return (uint32_t)map_hash_mix(h ^ k);
	}
	if (n == 8) {
		__builtin_memcpy(&w, p, 8);
		return (uint32_t)map_hash_mix(h ^ w);
	}
	while (n >= 8) {
		__builtin_memcpy(&w, p, 8);
		h = map_hash_mix(h ^ w);
		p += 8;
		n -= 8;
	}
	if (n) {
		w = 0;
		__builtin_memcpy(&w, p, n);
		h = map_hash_mix(h ^ w ^ ((uint64_t)n << 56));
	}
	return (uint32_t)h;
}

static inline bool map_key_equal(const struct nb_map *m, const void *a, const void *b)
{
	uint64_t x, y;
	uint32_t u, v;

	switch (m->key_size) {
	case 4:
		__builtin_memcpy(&u, a, 4);
		__builtin_memcpy(&v, b, 4);
		return u == v;
	case 8:
		__builtin_memcpy(&x, a, 8);
		__builtin_memcpy(&y, b, 8);
		return x == y;
	default:
		return __builtin_memcmp(a, b, m->key_size) == 0;
	}
}

/* Lock-free chain walk: acquire loads pair with the writers' release publication. */
static inline struct map_elem *map_hash_find_inline(struct nb_map *m, const void *key, uint32_t h)
{
	struct map_bucket *b = &m->buckets[h & m->bucket_mask];

	for (struct map_elem *e = atomic_load_explicit(&b->head, memory_order_acquire); e;
	     e = atomic_load_explicit(&e->next, memory_order_acquire)) {
		if (e->hash == h && map_key_equal(m, e->data, key))
			return e;
	}
	return NULL;
}

int map_hash_init(struct nb_map *m, char *err, size_t errlen);
void map_hash_destroy(struct nb_map *m);
uint32_t map_hash_key(const struct nb_map *m, const void *key);
/* Lookup without LRU bookkeeping; caller inside an epoch section or holding the lock. */
struct map_elem *map_hash_find(struct nb_map *m, const void *key, uint32_t h);
/* Finds the link that points to the element with this key (writers, under lock). */
_Atomic(struct map_elem *) *map_hash_find_link(struct nb_map *m, const void *key, uint32_t h,
					       struct map_elem **found);
void *map_hash_lookup(struct nb_map *m, const void *key);
int map_hash_update(struct nb_map *m, const void *key, const void *value, uint64_t flags);
int map_hash_delete(struct nb_map *m, const void *key);
int map_hash_get_next_key(struct nb_map *m, const void *key, void *next_key);

/* ---- element pool (map_pool.c) ---- */
int map_pool_init(struct nb_map *m, char *err, size_t errlen);
/* Elements a hash map's pool holds beyond max_entries: clamped to [256, 8192]. They absorb
 * the elements retired while some reader is still inside a section; a reader preempted
 * inside one blocks reclamation for its whole time off the CPU. */
static inline uint64_t map_pool_slack(uint32_t max_entries)
{
	return max_entries < 256 ? 256 : (max_entries > 8192 ? 8192 : max_entries);
}
/* Bytes of one hash element: header, key and value each rounded to 8. */
static inline uint64_t map_hash_elem_size(uint32_t key_size, uint32_t value_size)
{
	return sizeof(struct map_elem) + MAP_ROUND8(key_size) + MAP_ROUND8(value_size);
}
static inline uint32_t map_pow2_roundup(uint32_t v)
{
	uint32_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}
void map_pool_destroy(struct nb_map *m);
/* Pops a free element (reclaiming opportunistically); NULL when none is free now. */
struct map_elem *map_pool_pop(struct nb_map *m);
/* Returns an element that was never published (no reader can hold it). */
void map_pool_push(struct nb_map *m, struct map_elem *e);
/* Element is unlinked: it goes back to the freelist once every reader that could hold it
 * has left its critical section. */
void map_pool_retire(struct nb_map *m, struct map_elem *e);
/* Moves retired elements no reader can hold back to the freelist. */
void map_pool_reclaim(struct nb_map *m, bool wait_for_lock);
/* Slow path when the pool is empty: reclaims, and, if the caller is outside any critical
 * section, waits (bounded) for readers to leave. Returns an element or NULL. */
struct map_elem *map_pool_pop_slow(struct nb_map *m);
/* Elements retired and not yet reclaimed (tests). */
uint32_t map_pool_pending(struct nb_map *m);

/* ---- agreed maps (map_agreed.c) ---- */
int map_agreed_validate(const struct nb_map_spec *s, const char *name, char *err, size_t errlen);
int map_agreed_init(struct nb_map *m, char *err, size_t errlen);
void map_agreed_destroy(struct nb_map *m);
void *map_agreed_lookup(struct nb_map *m, const void *key);
int map_agreed_update(struct nb_map *m, const void *key, const void *value, uint64_t flags);

/* ---- LRU hash (map_lru.c) ---- */
void *map_lru_lookup(struct nb_map *m, const void *key);
int map_lru_update(struct nb_map *m, const void *key, const void *value, uint64_t flags);
int map_lru_delete(struct nb_map *m, const void *key);

#endif

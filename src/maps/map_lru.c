/* LRU hash map (BPF_MAP_TYPE_LRU_HASH): a hash map that, when full, evicts the least
 * recently used element instead of failing with -E2BIG.
 *
 * Lookups stay lock-free: they only set the element's reference bit (one relaxed store,
 * skipped when already set, so hot elements do not bounce cache lines). Writers serialise
 * on the map's LRU lock (like the kernel's common LRU list lock) and keep a list ordered
 * by insertion/update time. Eviction is second chance, as the kernel's ref bit: the tail
 * element is evicted unless it was looked up since it last reached the tail, in which
 * case it is moved to the head with its bit cleared. Single-threaded this is exact LRU
 * over updates and lookups. Unlike the kernel (which evicts in per-CPU batches before
 * checking flags) an update that fails with -EEXIST/-ENOENT evicts nothing. */
#include <errno.h>
#include <string.h>

#include "maps/map_internal.h"

static void lru_unlink(struct nb_map *m, struct map_elem *e)
{
	if (e->lru_prev)
		e->lru_prev->lru_next = e->lru_next;
	else
		m->lru_head = e->lru_next;
	if (e->lru_next)
		e->lru_next->lru_prev = e->lru_prev;
	else
		m->lru_tail = e->lru_prev;
	e->lru_prev = e->lru_next = NULL;
}

static void lru_push_head(struct nb_map *m, struct map_elem *e)
{
	e->lru_prev = NULL;
	e->lru_next = m->lru_head;
	if (m->lru_head)
		m->lru_head->lru_prev = e;
	else
		m->lru_tail = e;
	m->lru_head = e;
}

/* Unlinks e from its bucket and the LRU list and retires it. Under lru_lock. */
static void lru_remove(struct nb_map *m, _Atomic(struct map_elem *) *link, struct map_elem *e)
{
	atomic_store_explicit(link, atomic_load_explicit(&e->next, memory_order_relaxed),
			      memory_order_release);
	lru_unlink(m, e);
	atomic_fetch_sub_explicit(&m->count, 1, memory_order_relaxed);
	map_pool_retire(m, e);
}

static void lru_evict_one(struct nb_map *m)
{
	uint32_t budget = atomic_load_explicit(&m->count, memory_order_relaxed);
	struct map_elem *v, *found;
	_Atomic(struct map_elem *) *link;

	/* Second chance, bounded by one rotation so concurrent lookups cannot keep us
	 * here forever. */
	while ((v = m->lru_tail) != NULL && budget--) {
		if (!atomic_load_explicit(&v->lru_ref, memory_order_relaxed))
			break;
		atomic_store_explicit(&v->lru_ref, 0, memory_order_relaxed);
		lru_unlink(m, v);
		lru_push_head(m, v);
	}
	v = m->lru_tail;
	if (!v)
		return;
	link = map_hash_find_link(m, map_elem_key(v), v->hash, &found);
	if (found == v)
		lru_remove(m, link, v);
}

void *map_lru_lookup(struct nb_map *m, const void *key)
{
	struct map_elem *e = map_hash_find_inline(m, key, map_hash_key_inline(m, key));

	if (!e)
		return NULL;
	if (!atomic_load_explicit(&e->lru_ref, memory_order_relaxed))
		atomic_store_explicit(&e->lru_ref, 1, memory_order_relaxed);
	return map_elem_value(m, e);
}

int map_lru_update(struct nb_map *m, const void *key, const void *value, uint64_t flags)
{
	uint32_t h = map_hash_key(m, key);
	_Atomic(struct map_elem *) *link;
	struct map_bucket *b = &m->buckets[h & m->bucket_mask];
	struct map_elem *old, *e;
	int err = 0;

	if (flags > NB_EXIST)
		return -EINVAL;
	pthread_mutex_lock(&m->lru_lock);
	link = map_hash_find_link(m, key, h, &old);
	if (old && flags == NB_NOEXIST) {
		err = -EEXIST;
		goto out;
	}
	if (!old && flags == NB_EXIST) {
		err = -ENOENT;
		goto out;
	}
	if (!old && atomic_load_explicit(&m->count, memory_order_relaxed) >= m->max_entries)
		lru_evict_one(m); /* inserts go to the bucket head: `link` is not used */
	e = map_pool_pop(m);
	if (!e)
		e = map_pool_pop_slow(m);
	if (!e) {
		err = -ENOMEM;
		goto out;
	}
	e->hash = h;
	memcpy(map_elem_key(e), key, m->key_size);
	memcpy(map_elem_value(m, e), value, m->value_size);
	if (old) {
		atomic_store_explicit(&e->next, atomic_load_explicit(&old->next, memory_order_relaxed),
				      memory_order_relaxed);
		atomic_store_explicit(link, e, memory_order_release);
		lru_unlink(m, old);
		map_pool_retire(m, old);
	} else {
		atomic_store_explicit(&e->next, atomic_load_explicit(&b->head, memory_order_relaxed),
				      memory_order_relaxed);
		atomic_store_explicit(&b->head, e, memory_order_release);
		atomic_fetch_add_explicit(&m->count, 1, memory_order_relaxed);
	}
	lru_push_head(m, e);
out:
	pthread_mutex_unlock(&m->lru_lock);
	return err;
}

int map_lru_delete(struct nb_map *m, const void *key)
{
	uint32_t h = map_hash_key(m, key);
	_Atomic(struct map_elem *) *link;
	struct map_elem *e;
	int err = 0;

	pthread_mutex_lock(&m->lru_lock);
	link = map_hash_find_link(m, key, h, &e);
	if (e)
		lru_remove(m, link, e);
	else
		err = -ENOENT;
	pthread_mutex_unlock(&m->lru_lock);
	return err;
}

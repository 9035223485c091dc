/* Hash map (BPF_MAP_TYPE_HASH) and the table core shared with the LRU hash.
 *
 * n_buckets = max_entries rounded up to a power of two (as the kernel). Each bucket is a
 * singly linked chain that lookups walk without any lock (acquire loads); writers take
 * the bucket's spinlock. An element is fully written before it is published with a
 * release store, and it is never modified while reachable: replacing a key's value
 * publishes a new element in the old one's place and retires the old one (the kernel's
 * htab does the same), so a reader holding the old value pointer keeps reading a stable,
 * untorn old value until its critical section ends. Unlinked elements keep their `next`
 * pointer, so a reader standing on one still reaches the rest of the chain. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map_internal.h"

uint32_t map_hash_key(const struct nb_map *m, const void *key)
{
	return map_hash_key_inline(m, key);
}

/* Sizes were checked by map_spec_check (map_create). */
int map_hash_init(struct nb_map *m, char *err, size_t errlen)
{
	uint32_t nb;

	m->stride = (uint32_t)map_hash_elem_size(m->key_size, m->value_size);
	m->key_off_value = (uint32_t)MAP_ROUND8(m->key_size);
	nb = map_pow2_roundup(m->max_entries);
	m->bucket_mask = nb - 1;
	int rc = map_pool_init(m, err, errlen);
	if (rc)
		return rc;
	m->buckets = aligned_alloc(64, ((size_t)nb * sizeof(struct map_bucket) + 63) & ~(size_t)63);
	if (!m->buckets) {
		map_pool_destroy(m);
		snprintf(err, errlen, "map '%s': cannot allocate %u buckets", m->name, nb);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nb; i++) {
		atomic_init(&m->buckets[i].head, NULL);
		atomic_init(&m->buckets[i].lock.v, 0);
	}
	return 0;
}

void map_hash_destroy(struct nb_map *m)
{
	map_pool_destroy(m);
	free(m->buckets);
	m->buckets = NULL;
}

struct map_elem *map_hash_find(struct nb_map *m, const void *key, uint32_t h)
{
	return map_hash_find_inline(m, key, h);
}

_Atomic(struct map_elem *) *map_hash_find_link(struct nb_map *m, const void *key, uint32_t h,
					       struct map_elem **found)
{
	_Atomic(struct map_elem *) *link = &m->buckets[h & m->bucket_mask].head;
	struct map_elem *e;

	while ((e = atomic_load_explicit(link, memory_order_relaxed)) != NULL) {
		if (e->hash == h && map_key_equal(m, e->data, key)) {
			*found = e;
			return link;
		}
		link = &e->next;
	}
	*found = NULL;
	return link;
}

void *map_hash_lookup(struct nb_map *m, const void *key)
{
	struct map_elem *e = map_hash_find_inline(m, key, map_hash_key_inline(m, key));
	return e ? map_elem_value(m, e) : NULL;
}

void map_spin_lock(map_spinlock_t *l)
{
	for (unsigned spins = 0;;) {
		if (!atomic_exchange_explicit(&l->v, 1, memory_order_acquire))
			return;
		while (atomic_load_explicit(&l->v, memory_order_relaxed)) {
#if defined(__x86_64__) || defined(__i386__)
			__builtin_ia32_pause();
#endif
			/* the holder may be preempted (more threads than cores): yield */
			if (++spins % 128 == 0)
				sched_yield();
		}
	}
}

int map_hash_update(struct nb_map *m, const void *key, const void *value, uint64_t flags)
{
	uint32_t h = map_hash_key(m, key);
	struct map_bucket *b = &m->buckets[h & m->bucket_mask];
	_Atomic(struct map_elem *) *link;
	struct map_elem *old, *e, *spare = NULL;
	int err;

	if (flags > NB_EXIST)
		return -EINVAL;
	for (;;) {
		/* Fill the new element before taking the lock; hand it back on error. */
		e = spare ? spare : map_pool_pop(m);
		if (e) {
			e->hash = h;
			memcpy(map_elem_key(e), key, m->key_size);
			memcpy(map_elem_value(m, e), value, m->value_size);
		}
		map_spin_lock(&b->lock);
		link = map_hash_find_link(m, key, h, &old);
		if (old && flags == NB_NOEXIST) {
			err = -EEXIST;
			goto fail;
		}
		if (!old && flags == NB_EXIST) {
			err = -ENOENT;
			goto fail;
		}
		if (!old && atomic_load_explicit(&m->count, memory_order_relaxed) >= m->max_entries) {
			err = -E2BIG;
			goto fail;
		}
		if (e)
			break;
		/* Pool empty (elements still waiting for readers): retry after reclaiming. */
		map_spin_unlock(&b->lock);
		spare = map_pool_pop_slow(m);
		if (!spare)
			return -ENOMEM;
	}
	if (old) {
		atomic_store_explicit(&e->next, atomic_load_explicit(&old->next, memory_order_relaxed),
				      memory_order_relaxed);
		atomic_store_explicit(link, e, memory_order_release);
		map_spin_unlock(&b->lock);
		map_pool_retire(m, old);
	} else {
		/* count is checked and bumped under a bucket lock, but other buckets may
		 * insert concurrently: reserve a slot atomically. */
		if (atomic_fetch_add_explicit(&m->count, 1, memory_order_relaxed) >= m->max_entries) {
			atomic_fetch_sub_explicit(&m->count, 1, memory_order_relaxed);
			err = -E2BIG;
			goto fail;
		}
		atomic_store_explicit(&e->next, atomic_load_explicit(&b->head, memory_order_relaxed),
				      memory_order_relaxed);
		atomic_store_explicit(&b->head, e, memory_order_release);
		map_spin_unlock(&b->lock);
	}
	return 0;
fail:
	map_spin_unlock(&b->lock);
	if (e)
		map_pool_push(m, e);
	return err;
}

int map_hash_delete(struct nb_map *m, const void *key)
{
	uint32_t h = map_hash_key(m, key);
	struct map_bucket *b = &m->buckets[h & m->bucket_mask];
	_Atomic(struct map_elem *) *link;
	struct map_elem *e;

	map_spin_lock(&b->lock);
	link = map_hash_find_link(m, key, h, &e);
	if (!e) {
		map_spin_unlock(&b->lock);
		return -ENOENT;
	}
	atomic_store_explicit(link, atomic_load_explicit(&e->next, memory_order_relaxed),
			      memory_order_release);
	map_spin_unlock(&b->lock);
	atomic_fetch_sub_explicit(&m->count, 1, memory_order_relaxed);
	map_pool_retire(m, e);
	return 0;
}

/* Kernel order: the rest of the key's bucket, then the following buckets; a key that is
 * NULL or not present restarts from the first bucket. */
int map_hash_get_next_key(struct nb_map *m, const void *key, void *next_key)
{
	uint32_t i = 0;
	struct map_elem *e = NULL, *n;
	int rc = -ENOENT;

	map_epoch_enter();
	if (key) {
		uint32_t h = map_hash_key(m, key);
		e = map_hash_find(m, key, h);
		if (e) {
			n = atomic_load_explicit(&e->next, memory_order_acquire);
			if (n) {
				memcpy(next_key, map_elem_key(n), m->key_size);
				rc = 0;
				goto out;
			}
			i = (h & m->bucket_mask) + 1;
		}
	}
	for (; i <= m->bucket_mask; i++) {
		n = atomic_load_explicit(&m->buckets[i].head, memory_order_acquire);
		if (n) {
			memcpy(next_key, map_elem_key(n), m->key_size);
			rc = 0;
			break;
		}
	}
out:
	map_epoch_exit();
	return rc;
}

/* Preallocated element pool of a hash map: a lock-free freelist (indices with a
 * generation counter against ABA) plus the list of retired elements that wait until no
 * reader can hold them. Updates never call malloc.
 *
 * The pool holds max_entries + slack elements. The slack covers replacements (a new
 * element is published before the old one is retired) and elements deleted but not yet
 * reclaimed. Reclaimed elements are poisoned (0xA5 bytes; under ASan also marked
 * unaddressable) so that a reader that kept a pointer past its critical section reads
 * garbage or gets an ASan report instead of silently reading a recycled value. */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "maps/map_internal.h"

#if defined(__SANITIZE_ADDRESS__)
#define MAP_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MAP_ASAN 1
#endif
#endif
#ifdef MAP_ASAN
#include <sanitizer/asan_interface.h>
#define MAP_POISON(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define MAP_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define MAP_POISON(p, n) ((void)(p), (void)(n))
#define MAP_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

static size_t elem_data_size(const struct nb_map *m)
{
	return m->stride - offsetof(struct map_elem, data);
}

static void pool_reclaim_domain(struct map_epoch_domain *d)
{
	struct nb_map *m = (struct nb_map *)((char *)d - offsetof(struct nb_map, domain));
	map_pool_reclaim(m, true);
}

/* The pool's size was checked by map_spec_check (map_create). */
int map_pool_init(struct nb_map *m, char *err, size_t errlen)
{
	uint64_t slack = map_pool_slack(m->max_entries);
	uint64_t n = (uint64_t)m->max_entries + slack, bytes = n * m->stride;

	m->n_elems = (uint32_t)n;
	m->reclaim_threshold = (uint32_t)(slack / 2);
	m->pool = aligned_alloc(64, (size_t)((bytes + 63) & ~63ull));
	if (!m->pool) {
		snprintf(err, errlen, "map '%s': cannot allocate %llu bytes of elements", m->name,
			 (unsigned long long)bytes);
		return -ENOMEM;
	}
	memset(m->pool, 0, (size_t)bytes);
	/* Freelist in index order: element 0 is popped first (helps locality). */
	for (uint32_t i = 0; i < m->n_elems; i++) {
		struct map_elem *e = map_elem_at(m, i);
		e->index = i;
		atomic_init(&e->free_next, i + 1 < m->n_elems ? i + 2 : 0);
		MAP_POISON(e->data, elem_data_size(m));
	}
	atomic_init(&m->free_head, 1);
	atomic_init(&m->count, 0);
	atomic_init(&m->retired, NULL);
	atomic_init(&m->n_retired, 0);
	pthread_mutex_init(&m->reclaim_lock, NULL);
	m->domain.reclaim = pool_reclaim_domain;
	map_epoch_domain_register(&m->domain);
	return 0;
}

void map_pool_destroy(struct nb_map *m)
{
	if (!m->pool)
		return;
	map_epoch_domain_unregister(&m->domain);
	MAP_UNPOISON(m->pool, (size_t)m->n_elems * m->stride);
	pthread_mutex_destroy(&m->reclaim_lock);
	free(m->pool);
	m->pool = NULL;
}

static void pool_push_raw(struct nb_map *m, struct map_elem *e)
{
	uint64_t old = atomic_load_explicit(&m->free_head, memory_order_relaxed);
	uint64_t desired;

	do {
		atomic_store_explicit(&e->free_next, (uint32_t)old, memory_order_relaxed);
		desired = (((old >> 32) + 1) << 32) | (uint64_t)(e->index + 1);
	} while (!atomic_compare_exchange_weak_explicit(&m->free_head, &old, desired,
							memory_order_release, memory_order_relaxed));
}

static struct map_elem *pool_pop_raw(struct nb_map *m)
{
	uint64_t old = atomic_load_explicit(&m->free_head, memory_order_acquire);
	uint64_t desired;
	struct map_elem *e;

	do {
		uint32_t idx = (uint32_t)old;
		if (!idx)
			return NULL;
		e = map_elem_at(m, idx - 1);
		/* e may be popped concurrently; the generation makes our CAS fail then. */
		desired = (((old >> 32) + 1) << 32) |
			  atomic_load_explicit(&e->free_next, memory_order_relaxed);
	} while (!atomic_compare_exchange_weak_explicit(&m->free_head, &old, desired,
							memory_order_acquire, memory_order_acquire));
	MAP_UNPOISON(e->data, elem_data_size(m));
	atomic_store_explicit(&e->next, NULL, memory_order_relaxed);
	atomic_store_explicit(&e->lru_ref, 0, memory_order_relaxed);
	e->lru_prev = e->lru_next = NULL;
	return e;
}

struct map_elem *map_pool_pop(struct nb_map *m)
{
	struct map_elem *e = pool_pop_raw(m);

	if (MAP_LIKELY(e != NULL))
		return e;
	map_pool_reclaim(m, false);
	return pool_pop_raw(m);
}

void map_pool_push(struct nb_map *m, struct map_elem *e)
{
	memset(e->data, 0xA5, elem_data_size(m));
	MAP_POISON(e->data, elem_data_size(m));
	pool_push_raw(m, e);
}

void map_pool_retire(struct nb_map *m, struct map_elem *e)
{
	struct map_elem *old;

	e->retire_epoch = map_epoch_retire_tag();
	old = atomic_load_explicit(&m->retired, memory_order_relaxed);
	do {
		e->retire_next = old;
	} while (!atomic_compare_exchange_weak_explicit(&m->retired, &old, e, memory_order_release,
							memory_order_relaxed));
	if (atomic_fetch_add_explicit(&m->n_retired, 1, memory_order_relaxed) + 1 >=
	    m->reclaim_threshold)
		map_pool_reclaim(m, false);
}

void map_pool_reclaim(struct nb_map *m, bool wait_for_lock)
{
	struct map_elem *list, *keep = NULL, *keep_tail = NULL, *next;
	uint64_t min;
	uint32_t freed = 0;

	if (wait_for_lock)
		pthread_mutex_lock(&m->reclaim_lock);
	else if (pthread_mutex_trylock(&m->reclaim_lock))
		return;
	list = atomic_exchange_explicit(&m->retired, NULL, memory_order_acquire);
	/* Computed after taking the list: every element in it was retired before. */
	min = list ? map_epoch_min_active() : 0;
	for (struct map_elem *e = list; e; e = next) {
		next = e->retire_next;
		if (e->retire_epoch < min) {
			map_pool_push(m, e);
			freed++;
		} else {
			e->retire_next = keep;
			if (!keep)
				keep_tail = e;
			keep = e;
		}
	}
	if (keep) {
		struct map_elem *old = atomic_load_explicit(&m->retired, memory_order_relaxed);
		do {
			keep_tail->retire_next = old;
		} while (!atomic_compare_exchange_weak_explicit(&m->retired, &old, keep,
								memory_order_release,
								memory_order_relaxed));
	}
	if (freed)
		atomic_fetch_sub_explicit(&m->n_retired, freed, memory_order_relaxed);
	pthread_mutex_unlock(&m->reclaim_lock);
}

struct map_elem *map_pool_pop_slow(struct nb_map *m)
{
	struct timespec start, now;
	struct map_elem *e;
	bool reader = map_epoch_in_section();

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (unsigned spin = 0;; spin++) {
		map_pool_reclaim(m, true);
		e = pool_pop_raw(m);
		if (e)
			return e;
		/* Inside a section our own epoch may be what blocks reclamation: waiting
		 * could deadlock, so fail at once (-ENOMEM to the caller). */
		if (reader)
			return NULL;
		if (!(spin & 63)) {
			clock_gettime(CLOCK_MONOTONIC, &now);
			if ((now.tv_sec - start.tv_sec) * 1000000000ll + (now.tv_nsec - start.tv_nsec) >
			    1000000000ll)
				return NULL; /* a reader stuck for a second: give up */
		}
		sched_yield();
	}
}

uint32_t map_pool_pending(struct nb_map *m)
{
	return atomic_load_explicit(&m->n_retired, memory_order_relaxed);
}

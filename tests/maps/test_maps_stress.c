/* Multi-threaded stress of hash, LRU and array maps: readers check every value they get
 * (all words equal, a last word binding it to the key) and re-check it after a pause while
 * still inside their critical section; writers replace, delete and re-insert a small key
 * space. A reclaimed element is poisoned (ASan: unaddressable; otherwise 0xA5 bytes), so
 * premature reuse fails the invariant or trips ASan.
 *
 * Usage: test_maps_stress [seconds]   (default 2) */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sched.h>

#include "maps/map_internal.h"
#include "test_util.h"

#define VW 8          /* value words */
#define HASH_KEYS 48  /* <= max_entries: inserts never see -E2BIG */
#define HASH_MAX 64
#define LRU_KEYS 96   /* > max_entries: constant eviction */
#define LRU_MAX 32
#define ARR_N 16
#define FULL_KEYS 40  /* > max_entries: inserts also see -E2BIG */
#define FULL_MAX 16
#define N_READERS 3
#define N_WRITERS 3

static struct nb_map *hash, *lru, *arr, *full;
static atomic_bool stop;
static atomic_long bad_values, bad_rc, reads_hit, reads_total, writes, enomem_in_section;

static uint64_t rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void make_value(uint64_t *v, uint32_t key, uint64_t x)
{
	for (int i = 0; i < VW - 1; i++)
		v[i] = x;
	v[VW - 1] = ~x ^ ((uint64_t)key * 0x9e3779b97f4a7c15ull);
}

static int value_ok(const uint64_t *v, uint32_t key)
{
	uint64_t x = v[0];
	for (int i = 1; i < VW - 1; i++)
		if (v[i] != x)
			return 0;
	return v[VW - 1] == (~x ^ ((uint64_t)key * 0x9e3779b97f4a7c15ull));
}

/* Array words are self-checking one by one (in-place updates may mix words). */
static uint64_t arr_word(uint32_t x)
{
	return ((uint64_t)x << 32) | (uint32_t)(x * 2654435761u ^ 0x5bd1e995u);
}

static int arr_word_ok(uint64_t w)
{
	return (uint32_t)w == (uint32_t)((uint32_t)(w >> 32) * 2654435761u ^ 0x5bd1e995u);
}

static void check_hash_like(struct nb_map *m, uint32_t key, uint64_t *seed)
{
	const uint64_t *p = map_lookup(m, &key);
	uint64_t copy[VW];

	atomic_fetch_add_explicit(&reads_total, 1, memory_order_relaxed);
	if (!p)
		return;
	atomic_fetch_add_explicit(&reads_hit, 1, memory_order_relaxed);
	if (!value_ok(p, key)) {
		atomic_fetch_add(&bad_values, 1);
		return;
	}
	memcpy(copy, p, sizeof(copy));
	/* Hold the pointer a while: writers keep replacing/deleting this key meanwhile. */
	if ((rng(seed) & 7) == 0)
		sched_yield();
	else
		for (volatile int i = 0; i < (int)(rng(seed) & 255); i++)
			;
	if (memcmp(copy, p, sizeof(copy)) != 0)
		atomic_fetch_add(&bad_values, 1); /* element changed or was reused under us */
}

static void *reader(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 7919 + 1;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		map_epoch_enter();
		for (int i = 0; i < 4; i++) {
			check_hash_like(hash, (uint32_t)(rng(&seed) % HASH_KEYS), &seed);
			check_hash_like(lru, (uint32_t)(rng(&seed) % LRU_KEYS), &seed);
			check_hash_like(full, (uint32_t)(rng(&seed) % FULL_KEYS), &seed);
		}
		{
			uint32_t k = (uint32_t)(rng(&seed) % ARR_N);
			_Atomic uint64_t *p = map_lookup(arr, &k);
			for (int i = 0; p && i < VW; i++)
				if (!arr_word_ok(atomic_load_explicit(&p[i], memory_order_relaxed)))
					atomic_fetch_add(&bad_values, 1);
		}
		map_epoch_exit();
	}
	return NULL;
}

/* Allowed results: 0, `allowed`, -E2BIG for inserts into the map that may be full, and
 * -ENOMEM inside a section, where an exhausted pool fails instead of waiting for itself
 * (documented). */
static int rc_ok(int rc, int allowed, int insert_into_full, int in_section)
{
	if (rc == 0 || rc == allowed || (insert_into_full && rc == -E2BIG))
		return 1;
	if (rc == -ENOMEM && in_section) {
		atomic_fetch_add(&enomem_in_section, 1);
		return 1;
	}
	return 0;
}

static void writer_op(struct nb_map *m, uint32_t nkeys, uint64_t *seed, int in_section)
{
	int may_fill = m == full; /* only this map's key space exceeds max_entries */
	uint32_t key = (uint32_t)(rng(seed) % nkeys);
	uint64_t v[VW];
	uint64_t op = rng(seed) % 10;
	int rc, ok;

	make_value(v, key, rng(seed));
	if (op < 5) {
		rc = map_update(m, &key, v, NB_ANY);
		ok = rc_ok(rc, 0, may_fill, in_section);
	} else if (op < 7) {
		rc = map_delete(m, &key);
		ok = rc_ok(rc, -ENOENT, 0, in_section);
	} else if (op < 8) {
		rc = map_update(m, &key, v, NB_NOEXIST);
		ok = rc_ok(rc, -EEXIST, may_fill, in_section);
	} else if (op < 9) {
		rc = map_update(m, &key, v, NB_EXIST);
		ok = rc_ok(rc, -ENOENT, 0, in_section);
	} else {
		uint32_t next;
		rc = map_get_next_key(m, &key, &next);
		ok = rc_ok(rc, -ENOENT, 0, 0) && (rc || next < nkeys);
	}
	if (!ok) {
		if (atomic_fetch_add(&bad_rc, 1) < 5)
			fprintf(stderr, "map %s op %d: unexpected rc %d\n", map_name(m), (int)op, rc);
	}
	atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
}

static void *writer(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 104729 + 3;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		writer_op(hash, HASH_KEYS, &seed, 0);
		writer_op(lru, LRU_KEYS, &seed, 1);
		if ((rng(&seed) & 3) == 0) {
			uint32_t k = (uint32_t)(rng(&seed) % ARR_N);
			uint64_t v[VW];
			uint32_t x = (uint32_t)rng(&seed);
			for (int i = 0; i < VW; i++)
				v[i] = arr_word(x + (uint32_t)i);
			if (map_update(arr, &k, v, NB_ANY))
				atomic_fetch_add(&bad_rc, 1);
		}
		/* occasionally a writer is also a reader, updating from inside a section as
		 * programs do */
		if ((rng(&seed) & 15) == 0) {
			map_epoch_enter();
			check_hash_like(hash, (uint32_t)(rng(&seed) % HASH_KEYS), &seed);
			writer_op(hash, HASH_KEYS, &seed, 1);
			map_epoch_exit();
		}
	}
	return NULL;
}

static int count_keys(struct nb_map *m, uint32_t nkeys, int *bad)
{
	uint32_t cur, prev, *kp = NULL;
	int n = 0;

	map_epoch_enter();
	while (map_get_next_key(m, kp, &cur) == 0 && n < 100000) {
		const uint64_t *p = map_lookup(m, &cur);
		if (cur >= nkeys || !p || !value_ok(p, cur))
			++*bad;
		n++;
		prev = cur;
		kp = &prev;
	}
	map_epoch_exit();
	return n;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 2.0;
	struct nb_map_spec hs = {"stress_hash", NB_MAP_TYPE_HASH, 4, VW * 8, HASH_MAX, 0};
	struct nb_map_spec ls = {"stress_lru", NB_MAP_TYPE_LRU_HASH, 4, VW * 8, LRU_MAX, 0};
	struct nb_map_spec as = {"stress_arr", NB_MAP_TYPE_ARRAY, 4, VW * 8, ARR_N, 0};
	struct nb_map_spec fs = {"stress_full", NB_MAP_TYPE_HASH, 4, VW * 8, FULL_MAX, 0};
	pthread_t rt[N_READERS], wt[N_WRITERS];
	struct timespec ts;
	char err[128];
	int bad = 0, n;

	CHECK_EQ_U64(map_create(&hs, &hash, err, sizeof(err)), 0);
	CHECK_EQ_U64(map_create(&ls, &lru, err, sizeof(err)), 0);
	CHECK_EQ_U64(map_create(&as, &arr, err, sizeof(err)), 0);
	CHECK_EQ_U64(map_create(&fs, &full, err, sizeof(err)), 0);
	if (!hash || !lru || !arr || !full)
		TEST_DONE();
	for (uint32_t k = 0; k < ARR_N; k++) {
		uint64_t v[VW];
		for (int i = 0; i < VW; i++)
			v[i] = arr_word(k);
		CHECK_EQ_U64(map_update(arr, &k, v, NB_ANY), 0);
	}
	for (long i = 0; i < N_READERS; i++)
		pthread_create(&rt[i], NULL, reader, (void *)(i + 1));
	for (long i = 0; i < N_WRITERS; i++)
		pthread_create(&wt[i], NULL, writer, (void *)(i + 1));
	ts.tv_sec = (time_t)seconds;
	ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
	nanosleep(&ts, NULL);
	atomic_store(&stop, true);
	for (int i = 0; i < N_READERS; i++)
		pthread_join(rt[i], NULL);
	for (int i = 0; i < N_WRITERS; i++)
		pthread_join(wt[i], NULL);

	printf("stress %.1fs: %ld reads (%ld hits), %ld writes, %ld bad values, %ld bad rcs, "
	       "%ld -ENOMEM inside sections\n",
	       seconds, atomic_load(&reads_total), atomic_load(&reads_hit), atomic_load(&writes),
	       atomic_load(&bad_values), atomic_load(&bad_rc), atomic_load(&enomem_in_section));
	CHECK_EQ_U64(atomic_load(&bad_values), 0);
	CHECK_EQ_U64(atomic_load(&bad_rc), 0);
	CHECK(atomic_load(&reads_hit) > 0);
	CHECK(atomic_load(&writes) > 0);

	/* Quiescent: the structure is consistent and every element comes back. */
	n = count_keys(hash, HASH_KEYS, &bad);
	CHECK(n <= HASH_KEYS);
	n = count_keys(lru, LRU_KEYS, &bad);
	CHECK(n <= LRU_MAX);
	n = count_keys(full, FULL_KEYS, &bad);
	CHECK(n <= FULL_MAX);
	CHECK_EQ_U64(bad, 0);
	map_epoch_reclaim();
	CHECK_EQ_U64(map_pool_pending(hash), 0);
	CHECK_EQ_U64(map_pool_pending(lru), 0);
	CHECK_EQ_U64(map_pool_pending(full), 0);
	for (uint32_t k = 0; k < HASH_KEYS; k++)
		map_delete(hash, &k);
	for (uint32_t k = 0; k < HASH_MAX; k++) {
		uint64_t v[VW];
		make_value(v, k, k);
		CHECK_EQ_U64(map_update(hash, &k, v, NB_NOEXIST), 0);
	}
	{
		uint32_t k = HASH_MAX;
		uint64_t v[VW] = {0};
		CHECK_EQ_U64(map_update(hash, &k, v, NB_NOEXIST), -E2BIG);
	}
	map_free(hash);
	map_free(lru);
	map_free(arr);
	map_free(full);
	TEST_DONE();
}

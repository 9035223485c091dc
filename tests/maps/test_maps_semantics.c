/* Map semantics against the kernel's: creation checks, every type, update flag and error,
 * iteration order rules, LRU eviction order, capacity, value alignment. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"
#include "test_util.h"

static struct nb_map *mk(uint32_t type, uint32_t ks, uint32_t vs, uint32_t max, uint32_t flags)
{
	struct nb_map_spec s = {"m", type, ks, vs, max, flags};
	struct nb_map *m = NULL;
	char err[256];
	int rc = map_create(&s, &m, err, sizeof(err));
	if (rc)
		fprintf(stderr, "map_create failed: %d %s\n", rc, err);
	return m;
}

static int create_rc(uint32_t type, uint32_t ks, uint32_t vs, uint32_t max, uint32_t flags,
		     char *err, size_t errlen)
{
	struct nb_map_spec s = {"bad", type, ks, vs, max, flags};
	struct nb_map *m = (struct nb_map *)1;
	int rc = map_create(&s, &m, err, errlen);
	if (rc == 0)
		map_free(m);
	else if (m != NULL)
		return 12345; /* out must be NULL on failure */
	return rc;
}

static void test_create_validation(void)
{
	char err[256];
	struct nb_map *m = NULL;

	CHECK_EQ_U64(create_rc(3, 4, 4, 1, 0, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "unsupported map type 3");
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_ARRAY, 8, 4, 1, 0, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "key_size 8");
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_PERCPU_ARRAY, 2, 4, 1, 0, err, sizeof(err)), -EINVAL);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 0, 4, 1, 0, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "must be > 0");
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 4, 0, 1, 0, err, sizeof(err)), -EINVAL);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_ARRAY, 4, 4, 0, 0, err, sizeof(err)), -EINVAL);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_LRU_HASH, 4, 4, 0, 0, err, sizeof(err)), -EINVAL);
	/* size limits */
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 513, 4, 1, 0, err, sizeof(err)), -E2BIG);
	CHECK_STR_CONTAINS(err, "key_size 513");
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 512, 4, 1, 0, err, sizeof(err)), 0);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_ARRAY, 4, (1u << 20) + 1, 1, 0, err, sizeof(err)), -E2BIG);
	CHECK_STR_CONTAINS(err, "value_size");
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 4, 1u << 20, 1, 0, err, sizeof(err)), 0);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_PERCPU_ARRAY, 4, (32u << 10) + 1, 1, 0, err, sizeof(err)),
		     -E2BIG);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_PERCPU_ARRAY, 4, 32u << 10, 1, 0, err, sizeof(err)), 0);
	/* absurd totals are refused before allocating */
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_ARRAY, 4, 1u << 20, 1u << 20, 0, err, sizeof(err)), -E2BIG);
	CHECK_STR_CONTAINS(err, "limit");
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 4, 8, 0xffffffffu, 0, err, sizeof(err)), -E2BIG);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_LRU_HASH, 64, 1u << 20, 100000, 0, err, sizeof(err)), -E2BIG);
	/* flags */
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_ARRAY, 4, 4, 1, 1u << 5, err, sizeof(err)), -EINVAL);
	CHECK_STR_CONTAINS(err, "map_flags 0x20");
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_ARRAY, 4, 4, 1, NB_MAP_F_NO_PREALLOC, err, sizeof(err)),
		     -EINVAL);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_ARRAY, 4, 4, 1, NB_MAP_F_MMAPABLE | NB_MAP_F_RDONLY_PROG,
			       err, sizeof(err)), 0);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_PERCPU_ARRAY, 4, 4, 1, NB_MAP_F_MMAPABLE, err, sizeof(err)),
		     -EINVAL);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 4, 4, 1, NB_MAP_F_RDONLY_PROG | NB_MAP_F_WRONLY_PROG,
			       err, sizeof(err)), -EINVAL);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 4, 4, 1, NB_MAP_F_RDONLY | NB_MAP_F_WRONLY, err,
			       sizeof(err)), -EINVAL);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 4, 4, 1, NB_MAP_F_NO_COMMON_LRU, err, sizeof(err)),
		     -EINVAL);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_LRU_HASH, 4, 4, 1, NB_MAP_F_NO_COMMON_LRU, err, sizeof(err)),
		     0);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_LRU_HASH, 4, 4, 1, NB_MAP_F_NO_PREALLOC, err, sizeof(err)),
		     -ENOTSUP);
	CHECK_EQ_U64(create_rc(NB_MAP_TYPE_HASH, 4, 4, 1, NB_MAP_F_NO_PREALLOC | NB_MAP_F_ZERO_SEED,
			       err, sizeof(err)), 0);
	/* bad arguments, no error buffer: no crash */
	CHECK_EQ_U64(map_create(NULL, &m, NULL, 0), -EINVAL);
	CHECK(m == NULL);
	CHECK_EQ_U64(map_create(NULL, NULL, err, sizeof(err)), -EINVAL);
	{
		struct nb_map_spec s = {NULL, NB_MAP_TYPE_HASH, 4, 4, 1, 0};
		CHECK_EQ_U64(map_create(&s, &m, NULL, 0), 0);
		CHECK(m && strcmp(map_name(m), "") == 0);
		map_free(m);
		s.type = 77;
		CHECK_EQ_U64(map_create(&s, &m, NULL, 0), -EINVAL);
	}
	map_free(NULL);
}

static void test_accessors(void)
{
	struct nb_map_spec s = {"stats", NB_MAP_TYPE_LRU_HASH, 8, 24, 10, NB_MAP_F_RDONLY_PROG};
	struct nb_map *m = NULL;
	char err[128];

	CHECK_EQ_U64(map_create(&s, &m, err, sizeof(err)), 0);
	if (!m)
		return;
	CHECK(strcmp(map_name(m), "stats") == 0);
	CHECK_EQ_U64(map_type(m), NB_MAP_TYPE_LRU_HASH);
	CHECK_EQ_U64(map_key_size(m), 8);
	CHECK_EQ_U64(map_value_size(m), 24);
	CHECK_EQ_U64(map_max_entries(m), 10);
	CHECK_EQ_U64(map_flags(m), NB_MAP_F_RDONLY_PROG);
	CHECK(map_needs_epoch(m));
	CHECK(map_array_base(m) == NULL);
	CHECK_EQ_U64(map_array_stride(m), 0);
	map_free(m);
}

static void test_array(uint32_t type)
{
	struct nb_map *m = mk(type, 4, 12, 5, 0);
	uint32_t k, next;
	uint8_t v[12], *p;
	uint8_t *base;

	CHECK(m != NULL);
	if (!m)
		return;
	CHECK(!map_needs_epoch(m));
	base = map_array_base(m);
	CHECK(base != NULL && ((uintptr_t)base & 7) == 0);
	CHECK_EQ_U64(map_array_stride(m), 16);
	for (k = 0; k < 5; k++) {
		p = map_lookup(m, &k);
		CHECK(p == base + 16 * k);
		CHECK(p && ((uintptr_t)p & 7) == 0);
		for (int i = 0; p && i < 16; i++)
			CHECK_EQ_U64(p[i], 0); /* zero-initialised, padding included */
	}
	k = 5;
	CHECK(map_lookup(m, &k) == NULL);
	k = 0xffffffffu;
	CHECK(map_lookup(m, &k) == NULL);

	memset(v, 0x11, sizeof(v));
	k = 2;
	CHECK_EQ_U64(map_update(m, &k, v, NB_ANY), 0);
	p = map_lookup(m, &k);
	CHECK(p && memcmp(p, v, 12) == 0);
	CHECK(p && p[12] == 0 && p[15] == 0); /* padding untouched */
	memset(v, 0x22, sizeof(v));
	CHECK_EQ_U64(map_update(m, &k, v, NB_EXIST), 0);
	CHECK(p && p[0] == 0x22 && p[11] == 0x22);
	CHECK_EQ_U64(map_update(m, &k, v, NB_NOEXIST), -EEXIST);
	CHECK_EQ_U64(map_update(m, &k, v, 3), -EINVAL);
	CHECK_EQ_U64(map_update(m, &k, v, 4), -EINVAL); /* BPF_F_LOCK: no spin lock in value */
	k = 5;
	CHECK_EQ_U64(map_update(m, &k, v, NB_ANY), -E2BIG);
	CHECK_EQ_U64(map_update(m, &k, v, 7), -EINVAL); /* flags checked first */
	k = 1;
	CHECK_EQ_U64(map_delete(m, &k), -EINVAL);
	CHECK_EQ_U64(map_update(m, &k, NULL, NB_ANY), -EINVAL);

	/* iteration */
	CHECK_EQ_U64(map_get_next_key(m, NULL, &next), 0);
	CHECK_EQ_U64(next, 0);
	k = 3;
	CHECK_EQ_U64(map_get_next_key(m, &k, &next), 0);
	CHECK_EQ_U64(next, 4);
	k = 4;
	CHECK_EQ_U64(map_get_next_key(m, &k, &next), -ENOENT);
	k = 99;
	CHECK_EQ_U64(map_get_next_key(m, &k, &next), 0);
	CHECK_EQ_U64(next, 0);
	{
		int n = 0;
		uint32_t cur, *kp = NULL;
		while (map_get_next_key(m, kp, &cur) == 0 && n < 100) {
			CHECK_EQ_U64(cur, (uint32_t)n);
			n++;
			k = cur;
			kp = &k;
		}
		CHECK_EQ_U64(n, 5);
	}
	map_free(m);

	/* one-entry array: the global-data shape */
	m = mk(type, 4, 3, 1, 0);
	if (m) {
		k = 0;
		CHECK_EQ_U64(map_array_stride(m), 8);
		CHECK(map_lookup(m, &k) == map_array_base(m));
		CHECK_EQ_U64(map_get_next_key(m, &k, &next), -ENOENT);
		map_free(m);
	}
}

static void test_hash_basic(uint32_t type)
{
	struct nb_map *m = mk(type, 8, 20, 4, 0);
	uint64_t k, next;
	uint8_t v[20];
	uint8_t *p;

	CHECK(m != NULL);
	if (!m)
		return;
	map_epoch_enter();
	k = 7;
	CHECK(map_lookup(m, &k) == NULL);
	memset(v, 1, sizeof(v));
	CHECK_EQ_U64(map_update(m, &k, v, NB_EXIST), -ENOENT);
	CHECK(map_lookup(m, &k) == NULL);
	CHECK_EQ_U64(map_update(m, &k, v, NB_NOEXIST), 0);
	p = map_lookup(m, &k);
	CHECK(p && memcmp(p, v, 20) == 0 && ((uintptr_t)p & 7) == 0);
	memset(v, 2, sizeof(v));
	CHECK_EQ_U64(map_update(m, &k, v, NB_NOEXIST), -EEXIST);
	CHECK(p && p[0] == 1); /* unchanged */
	CHECK_EQ_U64(map_update(m, &k, v, NB_EXIST), 0);
	{
		uint8_t *q = map_lookup(m, &k);
		CHECK(q && q[0] == 2 && q[19] == 2);
		/* replacement publishes a new element; the old value stays readable and
		 * unchanged until this thread leaves its critical section */
		CHECK(p && p[0] == 1 && p[19] == 1);
	}
	memset(v, 3, sizeof(v));
	CHECK_EQ_U64(map_update(m, &k, v, NB_ANY), 0);
	p = map_lookup(m, &k);
	CHECK(p && p[5] == 3);
	CHECK_EQ_U64(map_update(m, &k, v, 3), -EINVAL);
	CHECK_EQ_U64(map_update(m, &k, v, 4), -EINVAL);
	CHECK_EQ_U64(map_delete(m, &k), 0);
	CHECK(map_lookup(m, &k) == NULL);
	CHECK_EQ_U64(map_delete(m, &k), -ENOENT);
	CHECK_EQ_U64(map_get_next_key(m, NULL, &next), -ENOENT);
	map_epoch_exit();
	map_free(m);
}

static void test_hash_capacity(void)
{
	struct nb_map *m = mk(NB_MAP_TYPE_HASH, 4, 8, 100, 0);
	uint32_t k;
	uint64_t v;

	if (!m)
		return;
	for (k = 0; k < 100; k++) {
		v = k * 3;
		CHECK_EQ_U64(map_update(m, &k, &v, NB_ANY), 0);
	}
	v = 0;
	k = 100;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_ANY), -E2BIG);
	CHECK_EQ_U64(map_update(m, &k, &v, NB_NOEXIST), -E2BIG);
	CHECK_EQ_U64(map_update(m, &k, &v, NB_EXIST), -ENOENT);
	/* replacing existing keys needs no free slot */
	for (int round = 0; round < 300; round++) {
		k = (uint32_t)round % 100;
		v = (uint64_t)round;
		CHECK_EQ_U64(map_update(m, &k, &v, round & 1 ? NB_ANY : NB_EXIST), 0);
	}
	map_epoch_enter();
	for (k = 0; k < 100; k++) {
		uint64_t *p = map_lookup(m, &k);
		CHECK(p && *p == 200 + k);
	}
	map_epoch_exit();
	k = 42;
	CHECK_EQ_U64(map_delete(m, &k), 0);
	k = 1000;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_NOEXIST), 0);
	k = 1001;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_NOEXIST), -E2BIG);

	/* iteration visits every key once; then the kernel's delete-while-iterating loop */
	{
		static uint8_t seen[1002];
		uint32_t cur, prev, *kp = NULL;
		int n = 0;
		memset(seen, 0, sizeof(seen));
		while (map_get_next_key(m, kp, &cur) == 0 && n < 1000) {
			CHECK(cur < 1002);
			if (cur < 1002) {
				CHECK(!seen[cur]);
				seen[cur] = 1;
			}
			n++;
			prev = cur;
			kp = &prev;
		}
		CHECK_EQ_U64(n, 100);
		CHECK(seen[1000] && !seen[42] && seen[0] && seen[99]);
		k = 424242; /* missing key restarts at the first key */
		CHECK_EQ_U64(map_get_next_key(m, &k, &cur), 0);
		CHECK_EQ_U64(map_get_next_key(m, NULL, &prev), 0);
		CHECK_EQ_U64(cur, prev);
		n = 0;
		while (map_get_next_key(m, NULL, &cur) == 0 && n < 1000) {
			CHECK_EQ_U64(map_delete(m, &cur), 0);
			n++;
		}
		CHECK_EQ_U64(n, 100);
	}
	/* the pool is whole again: the map can be filled once more */
	map_epoch_reclaim();
	for (k = 0; k < 100; k++)
		CHECK_EQ_U64(map_update(m, &k, &v, NB_NOEXIST), 0);
	map_free(m);
}

/* Odd key/value sizes, large keys, collisions in a tiny bucket array. */
static void test_hash_sizes(void)
{
	static const uint32_t ks[] = {1, 3, 4, 8, 13, 64, 512};
	for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
		struct nb_map *m = mk(NB_MAP_TYPE_HASH, ks[i], 5, 50, 0);
		uint8_t key[512], val[5];
		int n_ok = 0;
		if (!m)
			continue;
		uint32_t nkeys = ks[i] == 1 ? 50 : 50;
		for (uint32_t j = 0; j < nkeys; j++) {
			memset(key, 0, sizeof(key));
			key[ks[i] - 1] = (uint8_t)j; /* differ only in the last byte */
			memset(val, (int)j, sizeof(val));
			n_ok += map_update(m, key, val, NB_NOEXIST) == 0;
		}
		CHECK_EQ_U64(n_ok, nkeys);
		map_epoch_enter();
		for (uint32_t j = 0; j < nkeys; j++) {
			uint8_t *p;
			memset(key, 0, sizeof(key));
			key[ks[i] - 1] = (uint8_t)j;
			p = map_lookup(m, key);
			CHECK(p && p[0] == (uint8_t)j && p[4] == (uint8_t)j);
		}
		memset(key, 0, sizeof(key));
		key[0] = 0xEE;
		if (ks[i] > 1)
			CHECK(map_lookup(m, key) == NULL);
		map_epoch_exit();
		map_free(m);
	}
}

static int lru_has(struct nb_map *m, uint32_t k)
{
	int r;
	map_epoch_enter();
	r = map_lookup(m, &k) != NULL;
	map_epoch_exit();
	return r;
}

/* lru_has() does a lookup (sets the reference bit): use a lookup-free probe for checks. */
static int lru_count_and_has(struct nb_map *m, uint32_t k, int *count)
{
	uint32_t cur, prev, *kp = NULL;
	int has = 0;
	*count = 0;
	while (map_get_next_key(m, kp, &cur) == 0 && *count < 1000) {
		has |= cur == k;
		++*count;
		prev = cur;
		kp = &prev;
	}
	return has;
}

static void test_lru(void)
{
	struct nb_map *m = mk(NB_MAP_TYPE_LRU_HASH, 4, 8, 4, 0);
	uint64_t v = 1;
	uint32_t k;
	int n;

	if (!m)
		return;
	for (k = 1; k <= 4; k++)
		CHECK_EQ_U64(map_update(m, &k, &v, NB_NOEXIST), 0);
	/* full: inserting evicts the least recently used (1) instead of -E2BIG */
	k = 5;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_NOEXIST), 0);
	CHECK(!lru_count_and_has(m, 1, &n));
	CHECK_EQ_U64(n, 4);
	/* a lookup of 2 protects it: 3 goes next */
	CHECK(lru_has(m, 2));
	k = 6;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_ANY), 0);
	CHECK(lru_count_and_has(m, 2, &n));
	CHECK(!lru_count_and_has(m, 3, &n));
	CHECK_EQ_U64(n, 4);
	/* order now (most recent first): 6 2 5 4 -> next victims 4 then 5 */
	k = 7;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_ANY), 0);
	CHECK(!lru_count_and_has(m, 4, &n));
	/* updating 5 makes it most recent: 2 goes before it */
	k = 5;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_EXIST), 0);
	k = 8;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_ANY), 0);
	CHECK(!lru_count_and_has(m, 2, &n));
	CHECK(lru_count_and_has(m, 5, &n));
	CHECK(lru_count_and_has(m, 6, &n));
	/* failed updates evict nothing */
	k = 8;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_NOEXIST), -EEXIST);
	k = 99;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_EXIST), -ENOENT);
	CHECK_EQ_U64(map_update(m, &k, &v, 3), -EINVAL);
	lru_count_and_has(m, 0, &n);
	CHECK_EQ_U64(n, 4);
	/* delete frees a slot: next insert evicts nothing */
	k = 6;
	CHECK_EQ_U64(map_delete(m, &k), 0);
	CHECK_EQ_U64(map_delete(m, &k), -ENOENT);
	k = 9;
	CHECK_EQ_U64(map_update(m, &k, &v, NB_ANY), 0);
	CHECK(lru_count_and_has(m, 7, &n) && lru_count_and_has(m, 5, &n));
	CHECK(lru_count_and_has(m, 8, &n) && lru_count_and_has(m, 9, &n));
	CHECK_EQ_U64(n, 4);
	/* many inserts never fail and keep exactly max_entries elements */
	for (k = 100; k < 1100; k++) {
		v = k;
		CHECK_EQ_U64(map_update(m, &k, &v, NB_ANY), 0);
	}
	lru_count_and_has(m, 0, &n);
	CHECK_EQ_U64(n, 4);
	for (k = 1096; k < 1100; k++) {
		uint64_t *p;
		map_epoch_enter();
		p = map_lookup(m, &k);
		CHECK(p && *p == k);
		map_epoch_exit();
	}
	map_free(m);
}

int main(void)
{
	test_create_validation();
	test_accessors();
	test_array(NB_MAP_TYPE_ARRAY);
	test_array(NB_MAP_TYPE_PERCPU_ARRAY);
	test_hash_basic(NB_MAP_TYPE_HASH);
	test_hash_basic(NB_MAP_TYPE_LRU_HASH);
	test_hash_capacity();
	test_hash_sizes();
	test_lru();
	TEST_DONE();
}

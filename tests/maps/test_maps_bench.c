/* Map fast-path cost, printed (never asserted): ns per array lookup, hash lookup (hit),
 * LRU lookup, epoch enter+exit pair, hash replace, against a plain C array index baseline
 * in the same process. Each figure is the best of 5 repetitions (the machine may be
 * shared). The checks only verify the lookups found the right values.
 *
 * Usage: test_maps_bench [iterations]   (default 2000000)
 * NCCLBPF_EPOCH_FENCE=1 forces the full-fence epoch mode, to compare. */
#include <stdlib.h>
#include <time.h>

#include "maps/epoch_fast.h"
#include "maps/map_internal.h"
#include "test_util.h"

#define NKEYS 1024

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* Not inlined, like a helper call from a program. */
static __attribute__((noinline)) void *baseline_lookup(uint64_t *base, const uint32_t *key)
{
	return *key < NKEYS ? &base[*key] : NULL;
}

#define REPS 5

static uint64_t run_lookups_once(struct nb_map *m, long iters, int epoch_each, double *ns)
{
	uint64_t sum = 0;
	double t0 = now_ns();

	if (!epoch_each)
		map_epoch_enter();
	for (long i = 0; i < iters; i++) {
		uint32_t k = (uint32_t)(i * 7) & (NKEYS - 1);
		uint64_t *p;
		if (epoch_each)
			map_epoch_enter();
		p = map_lookup(m, &k);
		sum += p ? *p : 1000000;
		if (epoch_each)
			map_epoch_exit();
	}
	if (!epoch_each)
		map_epoch_exit();
	*ns = (now_ns() - t0) / (double)iters;
	return sum;
}

static uint64_t run_lookups(struct nb_map *m, long iters, int epoch_each, double *best)
{
	uint64_t sum = 0;
	double ns;
	*best = 1e30;
	for (int r = 0; r < REPS; r++) {
		sum = run_lookups_once(m, iters, epoch_each, &ns);
		if (ns < *best)
			*best = ns;
	}
	return sum;
}

static __attribute__((noinline)) uint64_t run_baseline(const uint64_t *plain_tbl, long iters,
							double *best)
{
	uint64_t sum = 0;
	*best = 1e30;
	for (int r = 0; r < REPS; r++) {
		double t0 = now_ns(), ns;
		sum = 0;
		for (long i = 0; i < iters; i++) {
			uint32_t k = (uint32_t)(i * 7) & (NKEYS - 1);
			uint64_t *p = baseline_lookup((uint64_t *)plain_tbl, &k);
			sum += p ? *p : 1000000;
		}
		ns = (now_ns() - t0) / (double)iters;
		if (ns < *best)
			*best = ns;
	}
	return sum;
}

static double run_epoch(long iters)
{
	double best = 1e30;
	for (int r = 0; r < REPS; r++) {
		double t0 = now_ns(), ns;
		for (long i = 0; i < iters; i++) {
			map_epoch_enter();
			map_epoch_exit();
		}
		ns = (now_ns() - t0) / (double)iters;
		if (ns < best)
			best = ns;
	}
	return best;
}

static uint64_t expected_sum(long iters)
{
	uint64_t sum = 0;
	for (long i = 0; i < iters; i++)
		sum += ((uint32_t)(i * 7) & (NKEYS - 1)) * 3u;
	return sum;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 2000000;
	static uint64_t plain[NKEYS];
	struct nb_map *arr = NULL, *hash = NULL, *lru = NULL;
	struct nb_map_spec as = {"a", NB_MAP_TYPE_ARRAY, 4, 8, NKEYS, 0};
	struct nb_map_spec hs = {"h", NB_MAP_TYPE_HASH, 4, 8, NKEYS, 0};
	struct nb_map_spec ls = {"l", NB_MAP_TYPE_LRU_HASH, 4, 8, NKEYS, 0};
	double ns_base, ns_arr, ns_hash, ns_hash_ep, ns_lru, ns_epoch, ns_update, t0;
	uint64_t sum = 0;

	if (iters < 1)
		iters = 1;
	CHECK_EQ_U64(map_create(&as, &arr, NULL, 0), 0);
	CHECK_EQ_U64(map_create(&hs, &hash, NULL, 0), 0);
	CHECK_EQ_U64(map_create(&ls, &lru, NULL, 0), 0);
	if (!arr || !hash || !lru)
		TEST_DONE();
	for (uint32_t k = 0; k < NKEYS; k++) {
		uint64_t v = k * 3u;
		plain[k] = v;
		CHECK_EQ_U64(map_update(arr, &k, &v, NB_ANY), 0);
		CHECK_EQ_U64(map_update(hash, &k, &v, NB_ANY), 0);
		CHECK_EQ_U64(map_update(lru, &k, &v, NB_ANY), 0);
	}

	sum = run_baseline(plain, iters, &ns_base);
	CHECK_EQ_U64(sum, expected_sum(iters));

	CHECK_EQ_U64(run_lookups(arr, iters, 0, &ns_arr), expected_sum(iters));
	CHECK_EQ_U64(run_lookups(hash, iters, 0, &ns_hash), expected_sum(iters));
	CHECK_EQ_U64(run_lookups(hash, iters, 1, &ns_hash_ep), expected_sum(iters));
	CHECK_EQ_U64(run_lookups(lru, iters, 0, &ns_lru), expected_sum(iters));

	ns_epoch = run_epoch(iters);

	t0 = now_ns();
	for (long i = 0; i < iters / 4 + 1; i++) {
		uint32_t k = (uint32_t)(i * 7) & (NKEYS - 1);
		uint64_t v = k * 3u;
		if (map_update(hash, &k, &v, NB_ANY))
			sum = 0;
	}
	ns_update = (now_ns() - t0) / (double)(iters / 4 + 1);
	CHECK(sum != 0);

	printf("maps bench (%ld iterations x %d, best, 1 thread, 1024 keys):\n", iters, REPS);
	printf("  baseline C array index (call)    %6.2f ns\n", ns_base);
	printf("  array lookup                     %6.2f ns  (%.2fx baseline)\n", ns_arr,
	       ns_arr / ns_base);
	printf("  hash lookup, 4-byte key          %6.2f ns  (%.2fx)\n", ns_hash, ns_hash / ns_base);
	printf("  hash lookup + own enter/exit     %6.2f ns\n", ns_hash_ep);
	printf("  lru lookup                       %6.2f ns\n", ns_lru);
	printf("  epoch enter+exit pair            %6.2f ns  (%s)\n", ns_epoch,
	       map_epoch_uses_membarrier() ? "membarrier mode: no fence on enter"
					   : "full fence on enter");
	printf("  hash update (replace, ANY)       %6.2f ns\n", ns_update);
	map_free(arr);
	map_free(hash);
	map_free(lru);
	TEST_DONE();
}

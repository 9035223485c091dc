/* Property test of the profiler event path (issue 15: sampling, the mask in force per call,
 * v7, chaining), with a fixed seed so failures reproduce:
 *  1. NCCL-like streams: up to 8 collectives in flight per communicator, their proxy-side
 *     events (KernelCh, KernelPhase) interleaved at random, the process mask flipped at random
 *     between calls (as RAS or another communicator would), adaptive sampling on, host
 *     versions 5-7, with and without an inner plugin. Invariant: every collective completes
 *     exactly once, none through the stale reclaim, the pools drain, nothing is counted as
 *     stale or NULL, the inner plugin sees only its own handles.
 *  2. Garbage: random 64-bit handles and parent pointers into start/stop/record. Invariant:
 *     no crash (this test runs under ASan+UBSan in CI), the counters account for it.
 * Argument: iterations (default 4000). */
#include <dlfcn.h>
#include <unistd.h>

#include "plugin/chain/chain.h"
#include "prof_test_util.h"
#include "test_util.h"

#define FAKE(n) NB_BUILD_DIR "/tests/fake_plugins/lib" n ".so"
static struct obs ob;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
	return rng;
}

struct fake_state_prefix { /* fake_profiler.c: the counters this test reads */
	int inits, finalizes;
	int starts[16];
	int stops, records, kch_stop_records;
	int foreign_parent;
	int bad_handle;
};

static void streams(int v, const char *inner, int iters)
{
	if (inner)
		setenv("NCCLBPF_PROFILER_INNER", inner, 1);
	else
		unsetenv("NCCLBPF_PROFILER_INNER");
	chain_reset_for_tests();
	prof_set_mode("coll");
	unsetenv("NCCLBPF_PROFILE_SAMPLE"); /* adaptive */
	struct fake_state_prefix *fs = NULL, before;
	memset(&before, 0, sizeof(before));
	if (inner) {
		void *dl = dlopen(inner, RTLD_NOW | RTLD_LOCAL);
		fs = dl ? dlsym(dl, "fake_profiler_state") : NULL;
		CHECK(fs != NULL);
		if (fs)
			before = *fs;
	}
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	uint64_t comm = 0x7a4d000ull + (uint64_t)v * 2 + (inner != NULL);
	CHECK(ph_comm_init(&h, &c, comm, "random", 1, 4, 0) == 0);
	struct profiler_counters c0, c1;
	profiler_get_counters(&c0);
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	struct ph_coll fly[8];
	int n_fly = 0, issued = 0;
	int base_mask = h.mask;
	for (int it = 0; it < iters || n_fly; it++) {
		bool issue = it < iters && n_fly < 8 && (n_fly == 0 || rnd() % 2);
		if (issue) {
			/* RAS or another communicator: the mask changes between calls */
			if (rnd() % 16 == 0)
				h.mask = (int)(rnd() % 2 ? base_mask & ~(int)NB_PROF_KERNEL_CH
							: base_mask | (int)NB_PROF_KERNEL_CH);
			struct ph_coll k = {.coll_type = (int)(rnd() % 5), .count = 1ull << (rnd() % 20),
					    .algo = (int)(rnd() % 7), .proto = (int)(rnd() % 3),
					    .n_channels = 1 + (int)(rnd() % 8), .gpu_ns = 1000 + rnd() % 9000,
					    .user_tag = rnd(), .sym = rnd() % 8 == 0};
			ph_coll_app(&c, &k);
			fly[n_fly++] = k;
			issued++;
		} else {
			/* the proxy side of a random in-flight collective */
			int i = (int)(rnd() % (uint64_t)n_fly);
			ph_coll_proxy(&c, &fly[i]);
			fly[i] = fly[--n_fly];
		}
	}
	profiler_get_counters(&c1);
	CHECK(atomic_load(&ob.n) == issued); /* each completed, exactly once */
	struct profiler_ctx *pc = profiler_ctx_find(comm);
	CHECK(pc && atomic_load(&pc->pool.in_use) == 0);
	CHECK_EQ_U64(c1.stale_handles, c0.stale_handles);
	CHECK_EQ_U64(c1.null_handles, c0.null_handles);
	CHECK_EQ_U64(c1.dropped_pool, c0.dropped_pool);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
	if (fs) {
		CHECK(fs->foreign_parent == before.foreign_parent);
		CHECK(fs->bad_handle == before.bad_handle);
		CHECK(fs->stops - before.stops > 0);
	}
	CHECK(profiler_sample_requests() == 0);
}

static void garbage(int v, int iters)
{
	unsetenv("NCCLBPF_PROFILER_INNER");
	chain_reset_for_tests();
	prof_set_mode("full");
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0x6a7b00ull + (uint64_t)v, "garbage", 1, 4, 0) == 0);
	void *live[64];
	int n_live = 0;
	for (int it = 0; it < iters; it++) {
		uint64_t r = rnd();
		void *junk = (void *)(uintptr_t)(r % 3 == 0 ? rnd() : r % 3 == 1 ? (rnd() | 1) : (rnd() & ~0xfull));
		struct ph_ev e = {.type = 1u << (rnd() % 16), .func = "AllReduce", .dtype = "ncclFloat32",
				  .algo = "RING", .proto = rnd() % 4 ? "LL" : "", .n_channels = (int)(rnd() % 70),
				  .count = rnd() % 100000, .channel = (int)(rnd() % 64),
				  .pid = (pid_t)(rnd() % 3 ? getpid() : 1),
				  .parent = rnd() % 2 && n_live ? live[rnd() % (uint64_t)n_live] : junk,
				  .parent_group = rnd() % 2 ? junk : NULL, .user_tag = rnd(),
				  .is_sym = rnd() % 2};
		void *hd = NULL;
		switch (rnd() % 4) {
		case 0:
		case 1:
			ph_start_raw(&h, rnd() % 8 ? c.ctx : junk, &hd, &e);
			if (hd && n_live < 64)
				live[n_live++] = hd;
			break;
		case 2:
			if (n_live && rnd() % 2) {
				int i = (int)(rnd() % (uint64_t)n_live);
				ph_stop(&h, live[i]);
				live[i] = live[--n_live];
			} else {
				ph_stop(&h, junk);
			}
			break;
		default:
			ph_record(&h, n_live && rnd() % 2 ? live[rnd() % (uint64_t)n_live] : junk,
				  (int)(rnd() % 32), rnd());
			break;
		}
	}
	CHECK(ph_comm_finalize(&c) == 0);
	/* handles after finalize: stale, never dereferenced */
	for (int i = 0; i < n_live; i++) {
		ph_record(&h, live[i], NB_PROF_ST_KERNEL_CH_STOP, 1);
		ph_stop(&h, live[i]);
	}
	CHECK(1);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 && atoi(argv[1]) > 0 ? atoi(argv[1]) : 4000;
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_POLICY");
	for (int v = 5; v <= 7; v++) {
		streams(v, NULL, iters);
		streams(v, v == 5 ? FAKE("fake_profiler_v7") : FAKE("fake_profiler_v6"), iters / 2);
		garbage(v, iters * 2);
	}
	unsetenv("NCCLBPF_PROFILER_INNER");
	chain_reset_for_tests();
	TEST_DONE();
}

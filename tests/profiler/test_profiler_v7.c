/* ncclProfiler_v7 (NCCL 2.31) through the mock host: the per-call user tag reaches profiler
 * programs (ncclbpf_profiler_ctx.user_tag), symmetric-kernel collectives are reported as
 * NCCLBPF_ALGO_SYMMETRIC (v7's isSymColl, and the variant/"" form 2.31 gives v5/v6 plugins),
 * KernelPhase events (full mode) are taken without stale handles or drops, and the
 * KernelPhaseStop state carries its timestamp. */
#include "prof_test_util.h"
#include "test_util.h"

static struct obs ob;

static void test_tag_and_sym(int v)
{
	prof_set_mode("coll");
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	uint64_t comm = 0x7a000 + (uint64_t)v;
	CHECK(ph_comm_init(&h, &c, comm, "v7", 1, 4, 0) == 0);
	CHECK_EQ_U64(h.mask, NB_PROF_COLL | NB_PROF_KERNEL_CH); /* no KernelPhase in coll mode */
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = 256,
			    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL, .n_channels = 2,
			    .gpu_ns = 5000, .user_tag = 0xfeedull};
	ph_coll_run(&c, &k);
	CHECK(atomic_load(&ob.n) == 1);
	CHECK_EQ_U64(ob.last.user_tag, v >= 7 ? 0xfeedull : 0); /* v6 has no tag */
	CHECK(ob.last.algo == NCCLBPF_ALGO_RING && ob.last.proto == NCCLBPF_PROTO_LL);
	CHECK(ob.last.flags & NCCLBPF_PROF_F_GPU_TIMED);
	CHECK(!(ob.last.flags & NCCLBPF_PROF_F_SYMMETRIC));

	struct ph_coll s = k;
	s.sym = true;
	s.user_tag = 7;
	ph_coll_run(&c, &s);
	CHECK(atomic_load(&ob.n) == 2);
	CHECK(ob.last.algo == NCCLBPF_ALGO_SYMMETRIC); /* not "unknown" */
	CHECK(ob.last.proto == -1);
	CHECK(ob.last.flags & NCCLBPF_PROF_F_SYMMETRIC);
	CHECK_EQ_U64(ob.last.gpu_ns, 5000);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
}

static void test_phases_full(void)
{
	prof_set_mode("full");
	struct ph_host h;
	ph_open_table(&h, 7, prof_table(7));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0x7b000, "v7full", 1, 4, 0) == 0);
	CHECK_EQ_U64(h.mask, NB_PROF_ALL_V7);
	CHECK(h.mask & NB_PROF_KERNEL_PHASE);
	struct profiler_counters before, after;
	profiler_get_counters(&before);
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	for (int i = 0; i < 50; i++) {
		struct ph_coll k = {.coll_type = i % 5, .count = 4096, .algo = 1, .proto = 2,
				    .n_channels = 4, .gpu_ns = 9000, .network = i % 2, .steps = 2,
				    .user_tag = (uint64_t)i};
		ph_coll_run(&c, &k);
	}
	profiler_get_counters(&after);
	CHECK(atomic_load(&ob.n) == 50);
	CHECK_EQ_U64(after.stale_handles, before.stale_handles);
	CHECK_EQ_U64(after.dropped_pool, before.dropped_pool);
	CHECK_EQ_U64(after.null_handles, before.null_handles);
	struct profiler_ctx *pc = profiler_ctx_find(0x7b000);
	CHECK(pc != NULL);
	if (pc)
		CHECK_EQ_U64(atomic_load(&pc->pool.in_use), 0);
	CHECK_EQ_U64(ob.last.user_tag, 49);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
}

/* NCCLBPF_PROFILE_PHASES=1 (issue 25): coll mode asks for KernelPhase too; each phase's
 * slowest channel reaches the program context, with NCCLBPF_PROF_F_PHASES. The mock host
 * splits each channel's [start, stop] into three equal phases; channel c stops c*stagger
 * earlier, so channel 0 is the slowest: 9000/3 ns per phase. Without the variable (or on
 * v6) nothing is asked for and the fields stay 0. */
static void test_phases_coll(int v, bool want)
{
	if (want)
		setenv("NCCLBPF_PROFILE_PHASES", "1", 1);
	else
		unsetenv("NCCLBPF_PROFILE_PHASES");
	prof_set_mode("coll");
	struct ph_host h;
	ph_open_table(&h, v, prof_table(v));
	struct ph_comm c;
	uint64_t comm = 0x7c000 + (uint64_t)v * 2 + want;
	CHECK(ph_comm_init(&h, &c, comm, "phases", 1, 4, 0) == 0);
	bool on = want && v >= 7;
	CHECK(!!(h.mask & NB_PROF_KERNEL_PHASE) == on);
	atomic_store(&ob.n, 0);
	profiler_set_observer(obs_fn, &ob);
	struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = 4096,
			    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_SIMPLE, .n_channels = 4,
			    .gpu_ns = 9000, .stagger_ns = 300};
	ph_coll_run(&c, &k);
	CHECK(atomic_load(&ob.n) == 1);
	for (int i = 0; i < 3; i++)
		CHECK_EQ_U64(ob.last.phase_ns[i], on ? 3000 : 0);
	CHECK(!!(ob.last.flags & NCCLBPF_PROF_F_PHASES) == on);
	profiler_set_observer(NULL, NULL);
	CHECK(ph_comm_finalize(&c) == 0);
	/* the request is released with the context: neither bit stays set */
	CHECK(!(h.mask & NB_PROF_KERNEL_PHASE) || !on);
	unsetenv("NCCLBPF_PROFILE_PHASES");
}

int main(void)
{
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_POLICY");
	test_tag_and_sym(5); /* 2.31 through the v5/v6 shims: algo = variant, proto "" */
	test_tag_and_sym(6);
	test_tag_and_sym(7);
	test_phases_full();
	test_phases_coll(7, true);
	test_phases_coll(7, false);
	test_phases_coll(6, true);
	CHECK(strcmp(profiler_event_name(NB_PROF_KERNEL_PHASE), "KernelPhase") == 0);
	TEST_DONE();
}

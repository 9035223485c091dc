/* Profiler programs: SEC("profiler") objects attached through the runtime registry run once
 * per completed collective with the record of that collective (read-only), and their maps
 * see it. With a profiler program loaded and NCCLBPF_PROFILE unset, the mode defaults to
 * coll. A program that writes the context is rejected by the verifier and not attached.
 * Usage: test_profiler_program DIR-OF-BPF-OBJECTS */
#include "ncclbpf/ncclbpf.h"
#include "prof_test_util.h"
#include "runtime/runtime.h"
#include "test_util.h"

struct obs_v {
	uint64_t count, gpu_sum, last_bytes, last_seq, last_channels, last_rank;
};

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "tests/progs";
	char spec[1024];
	unsetenv("NCCLBPF_TRACE");
	setenv("NCCLBPF_PROFILE_SAMPLE", "1", 1); /* every collective GPU-timed */
	unsetenv("NCCLBPF_POLICY");
	/* the writer is rejected: nothing of it attaches */
	snprintf(spec, sizeof(spec), "%s/prof_writer.bpf.o", dir);
	CHECK(runtime_load_policies(spec) == 0);
	CHECK(runtime_hook_chain(NB_HOOK_PROFILER) == NULL);

	snprintf(spec, sizeof(spec), "%s/prof_observer.bpf.o", dir);
	CHECK(runtime_load_policies(spec) == 1);
	CHECK(runtime_hook_chain(NB_HOOK_PROFILER) != NULL);
	prof_set_mode(NULL); /* default: a profiler program is loaded -> coll */
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0x9a9aull, "prog", 1, 4, 3) == 0);
	CHECK_EQ_U64(h.mask, NB_PROF_COLL | NB_PROF_KERNEL_CH);
	for (int i = 0; i < 10; i++) {
		struct ph_coll k = {.coll_type = NCCLBPF_COLL_REDUCESCATTER, .count = 1000,
				    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL128,
				    .n_channels = 3, .gpu_ns = 7000 + (uint64_t)i};
		ph_coll_run(&c, &k);
	}
	struct ncclbpf_map *m = runtime_find_map("prof_obs");
	CHECK(m != NULL);
	if (m) {
		uint32_t key = NCCLBPF_COLL_REDUCESCATTER;
		struct obs_v v;
		CHECK(ncclbpf_map_lookup(m, &key, &v) == 0);
		CHECK_EQ_U64(v.count, 10);
		CHECK_EQ_U64(v.gpu_sum, 10 * 7000 + 45);
		CHECK_EQ_U64(v.last_bytes, 1000 * 4 * 4); /* ReduceScatter: x nRanks */
		CHECK_EQ_U64(v.last_seq, 9);
		CHECK_EQ_U64(v.last_channels, 3);
		CHECK_EQ_U64(v.last_rank, 3);
	}
	struct profiler_counters pc;
	profiler_get_counters(&pc);
	CHECK_EQ_U64(pc.program_faults, 0);
	CHECK(ph_comm_finalize(&c) == 0);

	/* with a profiler program loaded, KernelCh stays on every collective unless the user
	 * asked for sampling (regression: the bandit's reward lost its GPU times, issue 15) */
	unsetenv("NCCLBPF_PROFILE_SAMPLE");
	CHECK(ph_comm_init(&h, &c, 0x9a9bull, "prog-default", 1, 4, 3) == 0);
	struct profiler_ctx *pctx = profiler_ctx_find(0x9a9bull);
	/* on only so that a policy can steer bands (ncclbpf_sample_ctl); by default N = 1 */
	CHECK(pctx && pctx->sampler.fixed_n == 1 && pctx->sampler.requesting);
	for (int i = 0; i < 20; i++) {
		struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = 1000 + 100 * (uint64_t)(i % 3),
				    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_LL, .n_channels = 2,
				    .gpu_ns = 7000};
		ph_coll_run(&c, &k);
		CHECK(k.task_mask & NB_PROF_KERNEL_CH);
	}
	CHECK(ph_comm_finalize(&c) == 0);
	setenv("NCCLBPF_PROFILE_SAMPLE", "auto", 1);
	CHECK(ph_comm_init(&h, &c, 0x9a9cull, "prog-sampled", 1, 4, 3) == 0);
	pctx = profiler_ctx_find(0x9a9cull);
	CHECK(pctx && pctx->sampler.on);
	CHECK(ph_comm_finalize(&c) == 0);
	runtime_unload_policies();
	TEST_DONE();
}

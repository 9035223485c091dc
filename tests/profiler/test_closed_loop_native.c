/* The three-phase closed loop with the native baseline of adaptive_channels: profiler
 * events from the mock host -> per-collective timing -> latency statistics -> the policy
 * reads them (profiler_latency_get) -> next decision. Proves the profiler side of the loop
 * independently of the BPF stack (test_closed_loop runs the real plugin + BPF policy). */
#include "closed_loop.h"
#include "plugin/comm_channels.h"
#include "prof_test_util.h"
#include "test_util.h"

typedef int (*native_latency_lookup_fn)(const struct ncclbpf_latency_key *key,
					struct ncclbpf_latency_stats *out);
void native_adaptive_channels_set_lookup(native_latency_lookup_fn fn);
void native_adaptive_channels_reset(void);
int native_adaptive_channels(struct ncclbpf_tuner_ctx *ctx);

static int lookup(const struct ncclbpf_latency_key *k, struct ncclbpf_latency_stats *out)
{
	return profiler_latency_get(k->comm_id, k->coll_type, k->size_bucket, out);
}

struct drv {
	uint64_t comm;
};

static int decide(void *arg, int step, int *algo, int *proto)
{
	struct drv *d = arg;
	(void)step;
	struct ncclbpf_tuner_ctx ctx;
	memset(&ctx, 0, sizeof(ctx));
	ctx.comm_id = d->comm;
	ctx.n_bytes = CL_BYTES;
	ctx.coll_type = NCCLBPF_COLL_ALLREDUCE;
	ctx.n_ranks = 16;
	ctx.n_nodes = 2;
	int learned = comm_channels_get(d->comm);
	ctx.max_channels = learned > 0 ? (uint32_t)learned : 0;
	ctx.algo = NCCLBPF_ALGO_KEEP;
	ctx.proto = NCCLBPF_PROTO_KEEP;
	native_adaptive_channels(&ctx);
	*algo = NCCLBPF_ALGO_RING;
	*proto = NCCLBPF_PROTO_SIMPLE;
	int n = ctx.n_channels;
	/* the tuner shim's clamp */
	if (n > 0 && learned > 0 && n > learned)
		n = learned;
	return n;
}

int main(void)
{
	unsetenv("NCCLBPF_TRACE");
	setenv("NCCLBPF_PROFILE_SAMPLE", "1", 1); /* every collective GPU-timed */
	prof_set_mode("coll");
	comm_channels_reset();
	native_adaptive_channels_reset();
	native_adaptive_channels_set_lookup(lookup);
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm c;
	struct drv d = {.comm = 0x10095eedull};
	CHECK(ph_comm_init(&h, &c, d.comm, "loop", 2, 16, 0) == 0);
	static struct cl_result r;
	cl_run(&c, decide, &d, &r);
	cl_print("native", &r);
	int bad = cl_check("native", &r);
	CHECK_EQ_U64(bad, 0);
	CHECK_EQ_U64(comm_channels_get(d.comm), CL_COMM_CHANNELS); /* learned at calibration */
	CHECK(ph_comm_finalize(&c) == 0);

	/* the host runs ahead: completions arrive 3 collectives after each decision */
	native_adaptive_channels_reset();
	comm_channels_reset();
	d.comm = 0x1a99edull;
	CHECK(ph_comm_init(&h, &c, d.comm, "lagged", 2, 16, 0) == 0);
	static struct cl_result rl;
	cl_run_lag(&c, decide, &d, &rl, 3);
	cl_print("native lag 3", &rl);
	CHECK_EQ_U64(cl_check("native lag 3", &rl), 0);
	CHECK(ph_comm_finalize(&c) == 0);
	TEST_DONE();
}

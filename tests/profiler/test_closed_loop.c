/* The closed loop end to end, as NCCL would run it: the mock NCCL host dlopens the built
 * libncclbpf.so (tuner ABI v6 for NCCL 2.30 and profiler ABI v6 from the same library),
 * NCCLBPF_POLICY loads policies/adaptive_channels.bpf.o (verified, JIT-compiled), and every
 * step runs getCollInfo -> NCCL's selection -> the latency model -> profiler events ->
 * per-collective timing -> the ncclbpf_latency map -> the policy's next decision.
 * Three phases: ramp from 2 to >= 12 channels, drop under a 10x contention spike,
 * recover after it.  Usage: test_closed_loop LIBNCCLBPF.so POLICY.bpf.o */
#include <stdlib.h>
#include <string.h>

#include "closed_loop.h"
#include "mock_nccl.h"
#include "test_util.h"

struct drv {
	struct mock_comm *comm;
	int release;
	int bad_invariants;
};

static int decide(void *arg, int step, int *algo, int *proto)
{
	struct drv *d = arg;
	(void)step;
	float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	mock_cost_table(table, MOCK_TOPO_MULTI_NODE, 4, CL_BYTES, d->comm->n_ranks,
			d->comm->n_nodes);
	memcpy(before, table, sizeof(table));
	int n_ch = 0;
	if (mock_comm_get_coll_info(d->comm, 4, CL_BYTES, 1, 0, table, &n_ch) != 0)
		d->bad_invariants++;
	char why[256];
	if (mock_check_invariants(d->release, before, table, n_ch, d->comm->nccl_channels, why,
				  sizeof(why))) {
		if (d->bad_invariants++ < 3)
			fprintf(stderr, "invariant: %s\n", why);
	}
	if (mock_select(d->release, table, algo, proto) != 0)
		d->bad_invariants++;
	return n_ch;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s LIBNCCLBPF.so POLICY.bpf.o\n", argv[0]);
		return 2;
	}
	setenv("NCCLBPF_POLICY", argv[2], 1);
	unsetenv("NCCLBPF_PROFILE"); /* default: coll, because the policy uses the latency map */
	unsetenv("NCCLBPF_TRACE");
	setenv("NCCLBPF_PROFILE_SAMPLE", "1", 1); /* every collective GPU-timed */
	static struct mock_nccl m;
	int rc = mock_nccl_load_tuner(&m, 230, argv[1], 0);
	if (rc)
		fprintf(stderr, "load tuner: %s\n", m.err);
	CHECK(rc == 0);
	CHECK(m.tuner_version == 6);
	struct ph_host h;
	char err[256];
	rc = ph_open(&h, argv[1], 6, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s\n", err);
	CHECK(rc == 0);
	if (rc || m.tuner_version != 6)
		TEST_DONE();
	struct mock_comm mc;
	uint64_t comm = 0xc105ed100full;
	CHECK(mock_comm_init(&m, &mc, comm, 16, 2) == 0);
	CHECK(mc.nccl_channels == CL_COMM_CHANNELS);
	struct ph_comm pc;
	CHECK(ph_comm_init(&h, &pc, comm, "loop", 2, 16, 0) == 0);
	/* the default mode with a latency-map policy is "coll": Coll + KernelCh only */
	CHECK_EQ_U64(h.mask, (1u << 1) | (1u << 6));
	struct drv d = {.comm = &mc, .release = 230};
	static struct cl_result r;
	cl_run(&pc, decide, &d, &r);
	cl_print("bpf", &r);
	CHECK_EQ_U64(d.bad_invariants, 0);
	CHECK_EQ_U64(cl_check("bpf", &r), 0);
	CHECK(ph_comm_finalize(&pc) == 0);
	CHECK(mock_comm_finalize(&mc) == 0);
	ph_close(&h);
	mock_nccl_unload(&m);
	TEST_DONE();
}

/* One rank of a simulated job driving policies/bandit.bpf.o through the real plugin: the
 * mock NCCL host dlopens libncclbpf.so as NCCL 2.30 does (tuner v6 + profiler v6 of the same
 * library, the agreement layer between the processes), and runs S AllReduce collectives:
 * getCollInfo -> NCCL's selection rule -> a latency from a per-arm model -> the profiler's
 * events. Prints one summary line the test script compares across ranks.
 *
 * usage: bandit_rank LIB.so RANK NRANKS STEPS MODEL [--bytes B] [--host-delay-us U]
 * --host-delay-us U: the host sleeps U us before each call (a slow or loaded host; the GPU
 *   timeline is unchanged, and so are the rewards: run_bandit.sh's "slow" scenario).
 * Time is virtual: the kernels run back to back on a GPU timeline the host advances by each
 * collective's modelled time (the KernelCh timestamps), so the policy's reward - a kernel's
 * hold on the stream, from GPU timestamps - is the same however fast or loaded the machine
 * is (the host's own clock only makes it run ahead or behind; run_bandit.sh says what the
 * agreement's timing still moves).
 *   MODEL: wrong  NCCL's choice (AUTO) is 30 % slower than the best arm
 *          best   AUTO is the fastest; every other arm at least 15 % slower
 *          drift  as wrong, then halfway the best arm becomes 2.5x slower and another
 *                 arm 20 % faster than AUTO
 * Summary: "rank R: auto A best B final F converged_at N bad_exploit K drift_best D"
 * (pairs as algo*3+proto; converged_at = first step of the final run of one pair). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_nccl.h"
#include "plugin/profiler/nccl_profiler_abi.h"
#include "profiler_host.h"

#define NPAIR (MOCK_NUM_ALGOS * MOCK_NUM_PROTOS)

static uint64_t rng;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}

int main(int argc, char **argv)
{
	if (argc < 6) {
		fprintf(stderr, "usage: %s LIB.so RANK NRANKS STEPS wrong|best|drift [--bytes B] [--host-delay-us U]\n",
			argv[0]);
		return 2;
	}
	const char *lib = argv[1], *model = argv[5];
	int rank = atoi(argv[2]), n_ranks = atoi(argv[3]);
	long steps = atol(argv[4]);
	uint64_t bytes = 64 << 10;
	unsigned long host_delay_us = 0;
	for (int i = 6; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--bytes"))
			bytes = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--host-delay-us"))
			host_delay_us = strtoul(argv[i + 1], NULL, 10);
		else
			return 2;
	}
	if (rank < 0 || rank >= n_ranks || steps <= 0 ||
	    (strcmp(model, "wrong") && strcmp(model, "best") && strcmp(model, "drift")))
		return 2;
	rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)(rank + 1) * 0x2545f4914f6cdd1dull;

	static struct mock_nccl m;
	if (mock_nccl_load_tuner(&m, 230, lib, 0) != 0 || m.tuner_version != 6) {
		fprintf(stderr, "rank %d: load tuner: %s\n", rank, m.err);
		return 1;
	}
	struct ph_host h;
	char err[256];
	if (ph_open(&h, lib, 6, err, sizeof(err)) != 0) {
		fprintf(stderr, "rank %d: load profiler: %s\n", rank, err);
		return 1;
	}
	uint64_t comm = 0xba4d17ull;
	struct ph_comm pc;
	if (ph_comm_init(&h, &pc, comm, "bandit", n_ranks, n_ranks, rank) != 0)
		return 1;
	struct mock_comm mc;
	if (mock_comm_init(&m, &mc, comm, n_ranks, n_ranks) != 0)
		return 1;

	/* the per-arm model: AUTO is what NCCL picks from the untouched table */
	float table0[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	mock_cost_table(table0, MOCK_TOPO_MULTI_NODE, 4, bytes, n_ranks, n_ranks);
	int aa = 0, ap = 0;
	if (mock_select(230, table0, &aa, &ap) != 0)
		return 1;
	int auto_pair = aa * MOCK_NUM_PROTOS + ap;
	double mean[NPAIR], drifted[NPAIR];
	int avail[NPAIR], navail = 0;
	for (int i = 0; i < NPAIR; i++) {
		avail[i] = table0[i / MOCK_NUM_PROTOS][i % MOCK_NUM_PROTOS] >= 0;
		navail += avail[i];
		mean[i] = 115 + 10 * (i % 4); /* every non-AUTO arm: 15-45 % slower than AUTO */
	}
	mean[auto_pair] = 100;
	/* the best arm: the first available one that is not AUTO; the drift target: the next */
	int best = -1, second = -1;
	for (int i = 0; i < NPAIR; i++)
		if (avail[i] && i != auto_pair) {
			if (best < 0)
				best = i;
			else if (second < 0)
				second = i;
		}
	if (best < 0 || second < 0)
		return 1;
	if (strcmp(model, "best"))
		mean[best] = 70;
	memcpy(drifted, mean, sizeof(mean));
	drifted[best] = 175;
	drifted[second] = 80;
	int drift = !strcmp(model, "drift");

	/* the GPU timeline: the first kernel starts about now (on the GPU's clock) */
	uint64_t gpu_clock = ph_now_ns() + PH_GPU_SKEW_NS;
	int last = -1;
	long converged = 0, bad = 0, kch_late = 0, n_late = 0;
	for (long s = 0; s < steps; s++) {
		if (host_delay_us) {
			struct timespec ts = {(time_t)(host_delay_us / 1000000),
					      (long)(host_delay_us % 1000000) * 1000};
			nanosleep(&ts, NULL);
		}
		float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		memcpy(table, table0, sizeof(table));
		int n_ch = 0, algo = 1, proto = 2;
		mock_comm_get_coll_info(&mc, 4, bytes, 1, 0, table, &n_ch);
		if (mock_select(230, table, &algo, &proto) != 0)
			return 1;
		int pair = algo * MOCK_NUM_PROTOS + proto;
		if (pair != last) {
			last = pair;
			converged = s;
		}
		const double *mu = drift && s >= steps / 2 ? drifted : mean;
		/* exploitation phase (after exploration, away from the drift): never slower than AUTO */
		if (s >= 400 && (!drift || s < steps / 2 || s >= steps / 2 + 400) && mu[pair] > mu[auto_pair])
			bad++;
		/* the same collective time on every rank up to 3 %: one shared noise sequence */
		uint64_t x = (uint64_t)s * 0x9e3779b97f4a7c15ull;
		x ^= x >> 29;
		x *= 0xbf58476d1ce4e5b9ull;
		x ^= x >> 32;
		double common = 0.9 + 0.2 * (double)(x >> 11) / 9007199254740992.0;
		if ((x & 63) == 0)
			common *= 3; /* an outlier now and then */
		int ch = n_ch > 0 && n_ch < mc.nccl_channels ? n_ch : mc.nccl_channels;
		struct ph_coll k = {.coll_type = 4, .count = bytes / 4, .algo = algo, .proto = proto,
				    .n_channels = ch,
				    .gpu_ns = (uint64_t)(mu[pair] * 1000 * common * (1 + 0.03 * uniform())),
				    .gpu_at = gpu_clock};
		gpu_clock += k.gpu_ns; /* the next kernel waits for this one (one stream) */
		ph_coll_run(&pc, &k);
		if (s >= steps * 3 / 8 && s < steps / 2) { /* exploited, before any drift */
			kch_late += (k.task_mask & NB_PROF_KERNEL_CH) != 0;
			n_late++;
		}
	}
	ph_comm_finalize(&pc);
	mock_comm_finalize(&mc);
	int final_best = drift ? second : strcmp(model, "best") ? best : auto_pair;
	printf("rank %d: arms %d auto %d best %d final %d converged_at %ld bad_exploit %ld expect %d kch_pct %ld\n",
	       rank, navail, auto_pair, best, last, converged, bad, final_best,
	       n_late ? 100 * kch_late / n_late : -1);
	fflush(stdout);
	ph_close(&h);
	mock_nccl_unload(&m);
	return 0;
}

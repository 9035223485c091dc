/* One rank of a simulated job for the call-path scenarios (issue 25, CTest label abi): the
 * mock NCCL host dlopens the built libncclbpf.so as NCCL REL does (tuner v4..v7 and the
 * profiler version of that release, from the same library), creates one communicator as
 * rank R of N, and drives it through one of the NCCL call paths that can break "one tuner
 * call per collective, in the same order on every rank":
 *
 *   sym        2.31+: a symmetric-LL candidate wins, runs on rank 0 (registered buffers)
 *              and cannot run on the others, which NCCL makes call the tuner again
 *   allgatherv uneven all-gathers as NCCL builds them (a group of ncclBroadcast, one per
 *              root): 2.29+ batch them into plans and call the tuner once per plan, as an
 *              AllGather, using the tuner's nChannels as the plan's part count (2.29/2.30:
 *              unclamped; a count above the communicator's channels indexes channels it
 *              does not have: reported as a crash); <= 2.28 tune them as broadcasts
 *   simulate   ncclGroupSimulateEnd: the tuner runs for a group that is never launched (no
 *              profiler events), then the same group is launched (every rank alike);
 *              --simulate-ranks N: only ranks < N simulate (an application bug: the ranks'
 *              tuner calls shift, which `ncclbpf decisions` must show)
 *   ce         copy-engine collectives between tuned ones: CeColl profiler events, no tuner
 *   graph      CUDA graph: one capture (tuner calls, no profiler events: the plans are
 *              persistent), then replays (profiler events only, never the tuner)
 *   grouped    a group of mixed types and sizes: <= 2.30 one tuner call per bin of
 *              same-type tasks within 4x of each other (aggregated bytes, numPipeOps > 1),
 *              2.31+ one per collective
 *   nchannels  a policy asking for more channels than the communicator has (the same
 *              paths; what NCCL would index is checked)
 *   percall    2.31+: per-call algSelection (ncclCollConfig_t) on some calls
 *
 * Every launched collective's outcome (what NCCL runs) is written to OUT, one line each,
 * which the script compares across ranks; decisions go to NCCLBPF_DECISION_LOG.
 *
 * usage: abi_rank LIB RANK NRANKS STEPS --nccl REL --scenario NAME --out FILE
 *                 [--comm HEX] [--simulate-ranks N] [--sleep-us U] */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mock_nccl.h"
#include "ncclbpf/policy.h"
#include "plugin/profiler/nccl_profiler_abi.h"
#include "profiler_host.h"

#define KiB 1024ull
#define MiB (1024ull * 1024ull)
#define MAX_OPS 16
#define BCAST_PER_PLAN 3 /* broadcasts one plan can carry (NCCL: the work budget) */

struct op {
	int coll;       /* NCCLBPF_COLL_*; broadcasts become AllGatherV plans on 2.29+ */
	uint64_t bytes; /* as the tuner sees them (AllGather/ReduceScatter: times nRanks) */
	uint64_t tag;   /* per-call userProfilerTag (profiler v7) */
	unsigned sel;   /* per-call algSelection, bit per algorithm (2.31+), 0 = automatic */
	bool ce;        /* a copy-engine collective: never tuned */
	/* outcome */
	int algo, proto, nch, sym;
};

static struct mock_nccl m;
static struct mock_comm mc;
static struct ph_host h;
static struct ph_comm pc;
static int release, rank, n_ranks, n_nodes;
static FILE *out;
static long tuner_calls;
static int bad;

static uint64_t synth_latency(int ch, uint64_t step)
{
	int best = 4 << (rank % 3);
	int d = ch > best ? ch - best : best - ch;
	uint64_t x = (step * 2654435761ull) ^ (uint64_t)rank * 97;
	return 40000 + 5000ull * (uint64_t)rank + 3000ull * (uint64_t)(d * d) + (x >> 7) % 2000;
}

static int prof_version(int rel)
{
	return rel >= 231 ? 7 : rel >= 229 ? 6 : rel >= 228 ? 5 : 4;
}

/* one tuner call on the release's table for (coll, bytes); what NCCL selects */
static int tune(int coll, uint64_t bytes, int pipe_ops, int *a, int *p, int *nch)
{
	float t[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	mock_cost_table(before, MOCK_TOPO_MULTI_NODE, coll, bytes, n_ranks, n_nodes);
	memcpy(t, before, sizeof(t));
	*nch = 0;
	tuner_calls++;
	if (mock_comm_get_coll_info(&mc, coll, bytes, pipe_ops, 0, t, nch))
		return -1;
	char why[200];
	if (mock_check_invariants(release, before, t, *nch, 0, why, sizeof(why))) {
		fprintf(stderr, "rank %d: invariant violated: %s\n", rank, why);
		bad++;
	}
	if (release >= 231)
		return mock_select_231(before, t, a, p, NULL);
	return mock_select(release, t, a, p);
}

/* Ring/Tree: NCCL clamps the tuner's count to the communicator's (<= 2.30: the plan
 * scheduler; 2.31+: a cap on its own count) */
static int ran_channels(int nch)
{
	return nch > 0 && nch < mc.nccl_channels ? nch : mc.nccl_channels;
}

/* The tuning NCCL does for a group (ncclPrepareTasks / 2.31's per-call tuning, then the
 * broadcast plans); fills each op's outcome. */
static void tune_group(struct op *ops, int n)
{
	bool batch = release >= 229; /* ncclBroadcast -> AllGatherV plans (NCCL_ALLGATHERV_ENABLE) */
	if (release >= 231) {
		for (int i = 0; i < n; i++) {
			struct op *o = &ops[i];
			if (o->ce || (batch && o->coll == 0))
				continue;
			float t[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
			mock_cost_table(t, MOCK_TOPO_MULTI_NODE, o->coll, o->bytes, n_ranks, n_nodes);
			/* scenario sym: a symmetric-LL candidate that wins at small sizes, runnable
			 * only where the buffers are registered (rank 0) */
			bool symc = o->bytes <= 64 * KiB && !o->sel;
			struct mock_call call = {.coll = o->coll, .n_bytes = o->bytes,
						 .alg_selection = o->sel, .force_alg_selection = 0,
						 .sym_us = symc ? 0.5f : -1.0f,
						 .sym_can_run = rank == 0};
			struct mock_231_result r;
			bool satisfiable = false;
			for (int a = 0; a < MOCK_NUM_ALGOS; a++)
				for (int p = 0; p < MOCK_NUM_PROTOS; p++)
					if ((o->sel >> a & 1) && t[a][p] >= 0.0f)
						satisfiable = true;
			int rc = mock_collective_cfg(&mc, t, &call, &r);
			tuner_calls += r.calls;
			if (rc) {
				fprintf(stderr, "rank %d: collective failed (%d)\n", rank, rc);
				bad++;
				continue;
			}
			if (r.negative_written)
				bad++;
			o->algo = r.algo;
			o->proto = r.proto;
			o->nch = r.n_channels;
			o->sym = r.sym;
			/* a satisfiable per-call selection is never overridden */
			if (o->sel && satisfiable && !r.sym && !(o->sel >> r.algo & 1)) {
				fprintf(stderr, "rank %d: ran %s outside the call's algSelection 0x%x\n",
					rank, mock_algo_name(r.algo), o->sel);
				bad++;
			}
		}
	} else {
		/* <= 2.30: per collective type, tasks within 4x of the bin's largest share one call
		 * with the bin's aggregated bytes and numPipeOps = tasks per channel */
		bool done[MAX_OPS] = {false};
		for (int coll = 0; coll < NCCLBPF_NUM_COLLS; coll++) {
			for (;;) {
				int first = -1;
				for (int i = 0; i < n; i++)
					if (!done[i] && !ops[i].ce && ops[i].coll == coll &&
					    !(batch && coll == 0) &&
					    (first < 0 || ops[i].bytes > ops[first].bytes))
						first = i;
				if (first < 0)
					break;
				int members[MAX_OPS], k = 0;
				uint64_t total = 0;
				for (int i = 0; i < n; i++)
					if (!done[i] && !ops[i].ce && ops[i].coll == coll &&
					    ops[i].bytes * 4 >= ops[first].bytes) {
						members[k++] = i;
						total += ops[i].bytes;
						done[i] = true;
					}
				int pipe = (k + mc.nccl_channels - 1) / mc.nccl_channels, a, p, nch;
				if (tune(coll, total, pipe, &a, &p, &nch)) {
					bad++;
					continue;
				}
				for (int j = 0; j < k; j++) {
					ops[members[j]].algo = a;
					ops[members[j]].proto = p;
					ops[members[j]].nch = ran_channels(nch);
				}
			}
		}
	}
	if (!batch)
		return;
	/* broadcast plans: one tuner call each, as an AllGather of the plan's largest part */
	for (int i = 0; i < n;) {
		int members[BCAST_PER_PLAN], k = 0;
		uint64_t maxb = 0;
		for (; i < n && k < BCAST_PER_PLAN; i++)
			if (ops[i].coll == 0 && !ops[i].ce) {
				members[k++] = i;
				maxb = ops[i].bytes > maxb ? ops[i].bytes : maxb;
			}
		if (!k)
			break;
		int a, p, nch;
		if (tune(NCCLBPF_COLL_ALLGATHER, maxb, 1, &a, &p, &nch)) {
			bad++;
			continue;
		}
		/* 2.29/2.30: nChannels = the tuner's value as is (allgatherv_sched.cc), one part
		 * per channel, channel ids 0 .. nParts-1; 2.31+: capped at NCCL's count */
		int parts = release >= 231 ? ran_channels(nch) : nch > 0 ? nch : mc.nccl_channels;
		if (parts > mc.nccl_channels) {
			fprintf(stderr,
				"rank %d: NCCL %d.%d would index channel %d of a communicator with %d "
				"(batched broadcasts, nChannels %d from the tuner)\n",
				rank, release / 100, release % 100, parts - 1, mc.nccl_channels, nch);
			bad++;
		}
		for (int j = 0; j < k; j++) {
			ops[members[j]].algo = 1; /* AllGatherV runs ring */
			ops[members[j]].proto = p;
			ops[members[j]].nch = parts;
		}
	}
}

/* profiler events of a launched (or replayed) group */
static void profile_group(struct op *ops, int n, uint64_t step)
{
	for (int i = 0; i < n; i++) {
		struct op *o = &ops[i];
		if (o->ce) {
			if (prof_version(release) < 6)
				continue;
			void *e = NULL;
			struct ph_ev ev = {.type = NB_PROF_CE_COLL, .rank = rank,
					   .func = ph_func_name(o->coll), .count = o->bytes / 4,
					   .dtype = "ncclFloat32", .user_tag = o->tag};
			ph_start(&pc, &e, &ev);
			if (e)
				ph_stop(&h, e);
			continue;
		}
		int t = o->coll == 0 && release >= 229 ? 0 : o->coll;
		uint64_t count = o->bytes / 4;
		if (t == 2 || t == 3)
			count /= (uint64_t)n_ranks;
		struct ph_coll k = {.coll_type = t, .count = count ? count : 1, .algo = o->algo,
				    .proto = o->proto, .n_channels = o->nch,
				    .gpu_ns = synth_latency(o->nch, step), .user_tag = o->tag,
				    .sym = o->sym != 0};
		ph_coll_run(&pc, &k);
	}
}

static void report(const char *what, struct op *ops, int n, long step)
{
	for (int i = 0; i < n; i++)
		fprintf(out, "%s %ld %d %s %llu %s %s %d%s\n", what, step, i,
			ops[i].ce ? "CE" : mock_coll_name(ops[i].coll),
			(unsigned long long)ops[i].bytes, ops[i].ce ? "-" : ops[i].sym ? "sym" : mock_algo_name(ops[i].algo),
			ops[i].ce || ops[i].sym ? "-" : mock_proto_name(ops[i].proto), ops[i].ce ? 0 : ops[i].nch,
			ops[i].tag ? " tagged" : "");
}

/* What NCCL's API calls of a group emit before it is tuned (profiler v5+): GroupApi,
 * then one CollApi per collective with the call's tag - whenever Coll events are on, not
 * only with the CollApi bit (src/plugin/profiler.cc: the API masks include Coll and
 * KernelCh). The group ends (GroupEndApiStart), NCCL tunes it, then stops GroupApi. */
static void *api_begin(struct op *ops, int n)
{
	if (prof_version(release) < 5 || !ph_enabled(&h, NB_PROF_COLL))
		return NULL;
	void *g = NULL;
	struct ph_ev ge = {.type = NB_PROF_GROUP_API, .group_depth = 1};
	ph_start_raw(&h, pc.ctx, &g, &ge);
	for (int i = 0; i < n; i++) {
		void *a = NULL;
		struct ph_ev ae = {.type = NB_PROF_COLL_API, .parent = g, .user_tag = ops[i].tag,
				   .func = ph_func_name(ops[i].coll), .count = ops[i].bytes / 4,
				   .dtype = "ncclFloat32"};
		ph_start_raw(&h, pc.ctx, &a, &ae);
		if (a)
			ph_stop(&h, a);
	}
	if (g)
		ph_record(&h, g, NB_PROF_ST_GROUP_END_API_START, 0);
	return g;
}

static void launch(struct op *ops, int n, long step)
{
	void *g = api_begin(ops, n);
	tune_group(ops, n);
	if (g)
		ph_stop(&h, g);
	profile_group(ops, n, (uint64_t)step);
	report("ran", ops, n, step);
}

static int add(struct op *ops, int n, int coll, uint64_t bytes, uint64_t tag)
{
	memset(&ops[n], 0, sizeof(ops[n]));
	ops[n].coll = coll;
	ops[n].bytes = bytes;
	ops[n].tag = tag;
	ops[n].algo = ops[n].proto = -1;
	return n + 1;
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s LIB RANK NRANKS STEPS --nccl REL --scenario NAME --out FILE "
				"[--comm HEX] [--simulate-ranks N] [--sleep-us U]\n", argv[0]);
		return 2;
	}
	const char *lib = argv[1], *scen = NULL, *outpath = NULL;
	rank = atoi(argv[2]);
	n_ranks = atoi(argv[3]);
	long steps = atol(argv[4]);
	uint64_t comm = 0xab1c0001ull;
	int sim_ranks = -1;
	unsigned long sleep_us = 0;
	release = 231;
	for (int i = 5; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--nccl"))
			release = mock_nccl_parse_release(argv[i + 1]);
		else if (!strcmp(argv[i], "--scenario"))
			scen = argv[i + 1];
		else if (!strcmp(argv[i], "--out"))
			outpath = argv[i + 1];
		else if (!strcmp(argv[i], "--comm"))
			comm = strtoull(argv[i + 1], NULL, 16);
		else if (!strcmp(argv[i], "--simulate-ranks"))
			sim_ranks = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--sleep-us"))
			sleep_us = strtoul(argv[i + 1], NULL, 10);
	}
	if (release < 0 || !scen || !outpath || rank < 0 || rank >= n_ranks || steps <= 0)
		return 2;
	out = fopen(outpath, "w");
	if (!out)
		return 1;
	n_nodes = n_ranks; /* one rank per node: the network path */
	if (mock_nccl_load_tuner(&m, release, lib, 0) != 0) {
		fprintf(stderr, "rank %d: load tuner: %s\n", rank, m.err);
		return 1;
	}
	char err[256];
	if (ph_open(&h, lib, prof_version(release), err, sizeof(err)) != 0) {
		fprintf(stderr, "rank %d: load profiler: %s\n", rank, err);
		return 1;
	}
	if (ph_comm_init(&h, &pc, comm, "abi", n_nodes, n_ranks, rank) != 0 ||
	    mock_comm_init(&m, &mc, comm, n_ranks, n_nodes) != 0)
		return 1;

	struct op ops[MAX_OPS], graph[MAX_OPS];
	int ng = 0;
	for (long s = 0; s < steps; s++) {
		int n = 0;
		if (!strcmp(scen, "sym")) {
			n = add(ops, n, 4, 4 * KiB, 0);
			launch(ops, n, s);
			n = add(ops, 0, 4, 1 * MiB, 0);
			launch(ops, n, s);
		} else if (!strcmp(scen, "allgatherv") || !strcmp(scen, "nchannels")) {
			/* an uneven all-gather: one broadcast per root, sizes differ by root */
			for (int r = 0; r < n_ranks && n < MAX_OPS - 1; r++)
				n = add(ops, n, 0, (uint64_t)(r + 1) * 48 * KiB + (uint64_t)(s % 3) * KiB, 0);
			n = add(ops, n, 4, 256 * KiB, 0);
			launch(ops, n, s);
		} else if (!strcmp(scen, "simulate")) {
			n = add(ops, n, 4, 1 * MiB, 0);
			n = add(ops, n, 2, 256 * KiB * (uint64_t)n_ranks, 0);
			if (s % 4 == 0 && (sim_ranks < 0 || rank < sim_ranks)) {
				/* ncclGroupSimulateEnd of a candidate (a bigger AllReduce): tuned,
				 * never launched */
				struct op sim[1];
				add(sim, 0, 4, 2 * MiB, 0);
				tune_group(sim, 1);
			}
			launch(ops, n, s);
		} else if (!strcmp(scen, "ce")) {
			n = add(ops, n, 2, 8 * MiB, 0);
			ops[0].ce = true; /* copy-engine AllGather: no tuner call */
			n = add(ops, n, 4, 512 * KiB, 0);
			n = add(ops, n, 2, 4 * MiB, 0);
			ops[2].ce = true;
			launch(ops, n, s);
		} else if (!strcmp(scen, "graph")) {
			/* capture once (step 20: the policy already decides), replay every step */
			if (s == 20) {
				ng = add(graph, ng, 4, 2 * MiB, 11);
				ng = add(graph, ng, 4, 64 * KiB, 12);
				ng = add(graph, ng, 3, 1 * MiB, 13);
				tune_group(graph, ng); /* capture: NCCL tunes, the plans are persistent */
				report("captured", graph, ng, s);
			}
			if (ng) {
				profile_group(graph, ng, (uint64_t)s); /* replay: never the tuner */
				report("replayed", graph, ng, s);
			}
			n = add(ops, n, 4, 128 * KiB, 0); /* eager collectives around it */
			launch(ops, n, s);
		} else if (!strcmp(scen, "grouped")) {
			n = add(ops, n, 4, 1 * MiB, 1);
			n = add(ops, n, 4, 512 * KiB, 2);
			n = add(ops, n, 4, 4 * KiB, 3);
			n = add(ops, n, 2, 1 * MiB, 4);
			n = add(ops, n, 3, 1 * MiB, 5);
			n = add(ops, n, 4, 300 * KiB, 6);
			launch(ops, n, s);
		} else if (!strcmp(scen, "percall")) {
			/* two calls, each its own group: the tag reaches the decision log */
			n = add(ops, n, 4, 1 * MiB, 100 + (uint64_t)(s % 5));
			if (s % 2)
				ops[0].sel = 1u << 1; /* ring only */
			launch(ops, n, s);
			n = add(ops, 0, 4, 256 * KiB, 0);
			if (s % 3 == 0)
				ops[0].sel = 1u << 6; /* PAT: not offered here: falls back (force 0) */
			launch(ops, n, s);
		} else {
			fprintf(stderr, "unknown scenario %s\n", scen);
			return 2;
		}
		if (sleep_us) {
			struct timespec ts = {0, (long)sleep_us * 1000};
			nanosleep(&ts, NULL);
		}
	}
	fprintf(out, "tuner_calls %ld\n", tuner_calls);
	fclose(out);
	ph_comm_finalize(&pc);
	mock_comm_finalize(&mc);
	printf("rank %d done: %ld steps, %ld tuner calls, %d problems\n", rank, steps, tuner_calls,
	       bad);
	fflush(stdout);
	ph_close(&h);
	mock_nccl_unload(&m);
	return bad ? 1 : 0;
}

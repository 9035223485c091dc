/* mock_nccl_host: the command-line face of the mock NCCL host (no GPU needed).
 *
 *   mock_nccl_host simulate [--nccl 2.30] [--plugin ncclbpf] [--topo nvlink-node]
 *                           [--ranks 8] [--nodes 1]
 *       one training step's collectives: NCCL's default choice beside the policy's
 *       (the policy comes from NCCLBPF_POLICY, as in a real job)
 *   mock_nccl_host stress [--nccl 2.30] [--plugin ncclbpf] [--threads 8] [--comms 4]
 *                         [--iters 20000]
 *       getCollInfo from many threads on many communicators, every call checked against
 *       NCCL's invariants
 *   mock_nccl_host versions [--plugin ncclbpf]
 *       loads the library as each supported release does and reports the bound symbol
 * Exit status 0 when every invariant held.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_nccl.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024ull)

struct opts {
	int release;
	const char *plugin;
	enum mock_topo topo;
	int ranks, nodes, threads, comms;
	long iters;
};

static int parse_opts(int argc, char **argv, struct opts *o)
{
	o->release = 230;
	o->plugin = "ncclbpf";
	o->topo = MOCK_TOPO_NVLINK_NODE;
	o->ranks = 8;
	o->nodes = 1;
	o->threads = 8;
	o->comms = 4;
	o->iters = 20000;
	for (int i = 0; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v) {
			fprintf(stderr, "missing value for %s\n", k);
			return -1;
		}
		i++;
		if (!strcmp(k, "--nccl")) {
			o->release = mock_nccl_parse_release(v);
			if (o->release < 0) {
				fprintf(stderr, "unsupported NCCL release %s (2.27..2.30)\n", v);
				return -1;
			}
		} else if (!strcmp(k, "--plugin")) {
			o->plugin = v;
		} else if (!strcmp(k, "--topo")) {
			int t;
			for (t = 0; t < MOCK_TOPO_COUNT; t++)
				if (!strcmp(v, mock_topo_name((enum mock_topo)t)))
					break;
			if (t == MOCK_TOPO_COUNT) {
				fprintf(stderr, "unknown topology %s\n", v);
				return -1;
			}
			o->topo = (enum mock_topo)t;
		} else if (!strcmp(k, "--ranks")) {
			o->ranks = atoi(v);
		} else if (!strcmp(k, "--nodes")) {
			o->nodes = atoi(v);
		} else if (!strcmp(k, "--threads")) {
			o->threads = atoi(v);
		} else if (!strcmp(k, "--comms")) {
			o->comms = atoi(v);
		} else if (!strcmp(k, "--iters")) {
			o->iters = atol(v);
		} else {
			fprintf(stderr, "unknown option %s\n", k);
			return -1;
		}
	}
	if (o->ranks < 1 || o->nodes < 1 || o->threads < 1 || o->comms < 1 || o->iters < 1) {
		fprintf(stderr, "bad numeric option\n");
		return -1;
	}
	return 0;
}

static int load(struct mock_nccl *m, const struct opts *o)
{
	int rc = mock_nccl_load_tuner(m, o->release, o->plugin, 0);
	if (rc) {
		fprintf(stderr, "NCCL %d.%d could not load a tuner from NCCL_TUNER_PLUGIN=%s: %s\n",
			o->release / 100, o->release % 100, o->plugin, m->err);
		return rc;
	}
	return 0;
}

static void fmt_bytes(char *buf, size_t len, size_t n)
{
	if (n >= MiB && n % MiB == 0)
		snprintf(buf, len, "%zu MiB", (size_t)(n / MiB));
	else if (n >= KiB && n % KiB == 0)
		snprintf(buf, len, "%zu KiB", (size_t)(n / KiB));
	else
		snprintf(buf, len, "%zu B", n);
}

static int cmd_simulate(const struct opts *o)
{
	/* One step of a data+tensor parallel transformer job (sizes per rank). */
	static const struct {
		const char *what;
		int coll;
		size_t bytes;
	} step[] = {
		{ "broadcast RNG/buffers", 0, 1 * KiB },
		{ "TP activations (small)", 4, 32 * KiB },
		{ "TP activations", 4, 256 * KiB },
		{ "sequence-parallel gather", 2, 2 * MiB },
		{ "TP activations (large)", 4, 16 * MiB },
		{ "FSDP param all-gather", 2, 48 * MiB },
		{ "FSDP grad reduce-scatter", 3, 48 * MiB },
		{ "DDP gradient bucket", 4, 25 * MiB },
		{ "embedding gradients", 4, 96 * MiB },
		{ "optimizer-state gather", 2, 160 * MiB },
		{ "full-model all-reduce", 4, 512 * MiB },
		{ "grad-norm all-reduce", 4, 4 },
		{ "loss all-reduce", 4, 8 },
	};
	struct mock_nccl m;
	if (load(&m, o))
		return 1;
	struct mock_comm c;
	int rc = mock_comm_init(&m, &c, 0x5eed0001ull, o->ranks, o->nodes);
	if (rc) {
		fprintf(stderr, "tuner init failed: %d (NCCL would fail the communicator)\n", rc);
		return 1;
	}
	printf("NCCL %d.%d, tuner %s bound as ncclTunerPlugin_v%d, %s, %d ranks on %d node(s), "
	       "NCCLBPF_POLICY=%s\n",
	       o->release / 100, o->release % 100, m.opened_as, m.tuner_version,
	       mock_topo_name(o->topo), o->ranks, o->nodes,
	       getenv("NCCLBPF_POLICY") ? getenv("NCCLBPF_POLICY") : "(unset)");
	printf("%-26s %-13s %9s  %-18s %-18s %s\n", "collective", "type", "bytes",
	       "NCCL default", "with policy", "channels");
	int bad = 0;
	for (size_t i = 0; i < sizeof(step) / sizeof(step[0]); i++) {
		float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		mock_cost_table(before, o->topo, step[i].coll, step[i].bytes, o->ranks, o->nodes);
		memcpy(after, before, sizeof(before));
		int nch = 0, da = -1, dp = -1, pa = -1, pp = -1;
		rc = mock_comm_get_coll_info(&c, step[i].coll, step[i].bytes, 1, 0, after, &nch);
		char why[200] = "";
		if (rc || mock_check_invariants(o->release, before, after, nch, c.nccl_channels, why,
						sizeof(why))) {
			bad++;
			fprintf(stderr, "INVARIANT VIOLATED (%s): rc=%d %s\n", step[i].what, rc, why);
		}
		mock_select(o->release, before, &da, &dp);
		mock_select(o->release, after, &pa, &pp);
		char b[32], d[40], p[40], ch[32];
		fmt_bytes(b, sizeof(b), step[i].bytes);
		snprintf(d, sizeof(d), "%s/%s", mock_algo_name(da), mock_proto_name(dp));
		snprintf(p, sizeof(p), "%s/%s%s", mock_algo_name(pa), mock_proto_name(pp),
			 (pa != da || pp != dp) ? " *" : "");
		if (nch)
			snprintf(ch, sizeof(ch), "%d (policy)", nch);
		else
			snprintf(ch, sizeof(ch), "%d (NCCL)", c.nccl_channels);
		printf("%-26s %-13s %9s  %-18s %-18s %s\n", step[i].what,
		       mock_coll_name(step[i].coll), b, d, p, ch);
	}
	mock_comm_finalize(&c);
	printf("(* = the policy changed NCCL's algorithm/protocol)  invariants: %s\n",
	       bad ? "VIOLATED" : "all held");
	return bad ? 1 : 0;
}

struct stress_shared {
	const struct opts *o;
	struct mock_comm *comms;
	atomic_long calls, violations;
};

struct stress_thread {
	struct stress_shared *s;
	int id;
	pthread_t tid;
};

static void *stress_main(void *arg)
{
	struct stress_thread *t = arg;
	const struct opts *o = t->s->o;
	static const size_t sizes[] = { 0, 4, 1000, 4 * KiB, 32 * KiB, 33 * KiB, 512 * KiB,
					MiB, 4 * MiB, 48 * MiB, 100 * MiB, 1024 * MiB };
	unsigned seed = 0x9e3779b9u * (unsigned)(t->id + 1);
	for (long i = 0; i < o->iters; i++) {
		seed = seed * 1103515245u + 12345u;
		struct mock_comm *c = &t->s->comms[(seed >> 8) % (unsigned)o->comms];
		int coll = (int)((seed >> 16) % 5);
		size_t bytes = sizes[(seed >> 20) % (sizeof(sizes) / sizeof(sizes[0]))];
		enum mock_topo topo = c->n_ranks == 1 ? MOCK_TOPO_SINGLE_RANK
			: c->n_nodes > 1 ? MOCK_TOPO_MULTI_NODE
			: (enum mock_topo)((seed >> 24) % 2 ? MOCK_TOPO_NVLINK_NODE : MOCK_TOPO_NO_LL128);
		float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		mock_cost_table(before, topo, coll, bytes, c->n_ranks, c->n_nodes);
		memcpy(after, before, sizeof(before));
		int nch = 0;
		int rc = mock_comm_get_coll_info(c, coll, bytes, 1 + (int)(i % 3), (int)(i & 1), after,
						 &nch);
		char why[200];
		if (rc || mock_check_invariants(o->release, before, after, nch, 0, why, sizeof(why))) {
			if (atomic_fetch_add(&t->s->violations, 1) < 5)
				fprintf(stderr, "violation: rc=%d %s\n", rc, rc ? "error returned" : why);
		}
		atomic_fetch_add_explicit(&t->s->calls, 1, memory_order_relaxed);
	}
	return NULL;
}

static int cmd_stress(const struct opts *o)
{
	struct mock_nccl m;
	if (load(&m, o))
		return 1;
	struct mock_comm *comms = calloc((size_t)o->comms, sizeof(*comms));
	struct stress_thread *th = calloc((size_t)o->threads, sizeof(*th));
	if (!comms || !th)
		return 1;
	struct stress_shared s = { .o = o, .comms = comms };
	int failed = 0;
	for (int i = 0; i < o->comms; i++) {
		/* Mixed shapes: NVLink node, multi-node, and a single-rank comm. */
		int ranks = i % 4 == 3 ? 1 : (i % 2 ? 16 : 8), nodes = i % 4 == 1 ? 2 : 1;
		if (mock_comm_init(&m, &comms[i], 0xc0ffee00ull + (uint64_t)i, ranks, nodes))
			failed++;
	}
	for (int i = 0; i < o->threads; i++) {
		th[i].s = &s;
		th[i].id = i;
		pthread_create(&th[i].tid, NULL, stress_main, &th[i]);
	}
	for (int i = 0; i < o->threads; i++)
		pthread_join(th[i].tid, NULL);
	for (int i = 0; i < o->comms; i++)
		if (mock_comm_finalize(&comms[i]))
			failed++;
	printf("NCCL %d.%d (ncclTunerPlugin_v%d): %ld getCollInfo calls from %d threads on %d "
	       "communicators, %ld invariant violations, %d init/finalize errors\n",
	       o->release / 100, o->release % 100, m.tuner_version, (long)s.calls, o->threads,
	       o->comms, (long)s.violations, failed);
	free(comms);
	free(th);
	return s.violations || failed ? 1 : 0;
}

static int cmd_versions(const struct opts *o)
{
	static const int releases[] = { 227, 228, 229, 230 };
	int bad = 0;
	for (size_t i = 0; i < sizeof(releases) / sizeof(releases[0]); i++) {
		struct mock_nccl m;
		struct opts oo = *o;
		oo.release = releases[i];
		if (load(&m, &oo)) {
			bad++;
			continue;
		}
		struct mock_comm c;
		int rc = mock_comm_init(&m, &c, 0xabc0ull + i, 8, 1);
		float t[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		mock_cost_table(t, MOCK_TOPO_NVLINK_NODE, 4, MiB, 8, 1);
		int nch = 0, rc2 = rc ? -1 : mock_comm_get_coll_info(&c, 4, MiB, 1, 0, t, &nch);
		int rc3 = rc ? -1 : mock_comm_finalize(&c);
		printf("NCCL %d.%d: opened %s, bound ncclTunerPlugin_v%d, init %d, getCollInfo %d, "
		       "finalize %d\n",
		       releases[i] / 100, releases[i] % 100, m.opened_as, m.tuner_version, rc, rc2,
		       rc3);
		bad += rc || rc2 || rc3;
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s simulate|stress|versions [options]\n", argv[0]);
		return 2;
	}
	struct opts o;
	if (parse_opts(argc - 2, argv + 2, &o))
		return 2;
	if (!strcmp(argv[1], "simulate"))
		return cmd_simulate(&o);
	if (!strcmp(argv[1], "stress"))
		return cmd_stress(&o);
	if (!strcmp(argv[1], "versions"))
		return cmd_versions(&o);
	fprintf(stderr, "unknown command %s\n", argv[1]);
	return 2;
}

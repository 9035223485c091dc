/* mock_nccl_host: the command-line face of the mock NCCL host (no GPU needed). The
 * commands, options and exit codes are in host_usage and host_cmds below (`mock_nccl_host --help`);
 * README.md lists them too. Exit status: 0 every invariant held, 1 a violation or the
 * plugin could not be loaded, 2 usage error (same convention as the ncclbpf CLI). */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock_nccl.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024ull)

#define EXIT_USAGE 2

static const char host_usage[] =
	"usage: mock_nccl_host <command> [options]\n"
	"\n"
	"Loads libnccl-tuner-<plugin>.so exactly as NCCL does (dlopen RTLD_NOW|RTLD_LOCAL,\n"
	"NCCL_TUNER_PLUGIN name resolution, the versioned symbol each release binds) and\n"
	"drives it without a GPU. The library is found through LD_LIBRARY_PATH; policies\n"
	"come from NCCLBPF_POLICY, as in a real job.\n"
	"\n"
	"commands:\n"
	"  simulate   one training step's collectives: NCCL's default choice beside the\n"
	"             policy's, and which NCCLBPF_POLICY entries were attached or skipped\n"
	"  stress     getCollInfo from many threads on many communicators, every call\n"
	"             checked against NCCL's invariants\n"
	"  versions   loads the library as each release it emulates (2.27 .. 2.32) does,\n"
	"             reports what it emulates and the symbol bound\n"
	"  help [CMD] this text, or one command's options (also CMD --help)\n"
	"\n"
	"exit status: 0 every invariant held; 1 an invariant was violated or the plugin\n"
	"could not be loaded; 2 usage error.\n";

static const struct host_cmd {
	const char *name, *synopsis, *options;
} host_cmds[] = {
	{ "simulate", "[--nccl REL] [--plugin NAME] [--topo TOPO] [--ranks N] [--nodes N]",
	  "  --nccl REL     NCCL release to emulate (default 2.30)\n"
	  "  --plugin NAME  NCCL_TUNER_PLUGIN value (default: that variable, else ncclbpf)\n"
	  "  --topo TOPO    cost-table shape (default: single-rank, multi-node or\n"
	  "                 nvlink-node, from --ranks and --nodes)\n"
	  "  --ranks N      ranks in the communicator, 1 to 65536 (default 8)\n"
	  "  --nodes N      nodes, 1 to ranks (default 1); TOPO must fit: single-rank is\n"
	  "                 1 rank, multi-node 2+ nodes, the others 1 node of 2+ ranks\n" },
	{ "stress", "[--nccl REL] [--plugin NAME] [--threads N] [--comms N] [--iters N]",
	  "  --nccl REL     NCCL release to emulate (default 2.30)\n"
	  "  --plugin NAME  NCCL_TUNER_PLUGIN value (default: that variable, else ncclbpf)\n"
	  "  --threads N    calling threads, 1 to 1024 (default 8)\n"
	  "  --comms N      communicators, 1 to 4096 (default 4)\n"
	  "  --iters N      calls per thread, 1 to 10^9 (default 20000)\n" },
	{ "versions", "[--plugin NAME]",
	  "  --plugin NAME  NCCL_TUNER_PLUGIN value (default: that variable, else ncclbpf)\n" },
};
#define N_HOST_CMDS (sizeof(host_cmds) / sizeof(host_cmds[0]))

/* "2.27, 2.28, ...": every release mock_nccl_parse_release accepts. */
static void releases_list(char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int minor = 10; minor < 60; minor++) {
		char rel[16];
		snprintf(rel, sizeof(rel), "2.%d", minor);
		if (mock_nccl_parse_release(rel) < 0 || n + 8 >= len)
			continue;
		n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? ", " : "", rel);
	}
}

static void topo_list(char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int t = 0; t < MOCK_TOPO_COUNT && n + 32 < len; t++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", t ? ", " : "",
				      mock_topo_name((enum mock_topo)t));
}

static void print_cmd_help(FILE *f, const struct host_cmd *c)
{
	char rels[256], topos[256];
	releases_list(rels, sizeof(rels));
	topo_list(topos, sizeof(topos));
	fprintf(f, "usage: mock_nccl_host %s %s\n\noptions:\n%s", c->name, c->synopsis,
		c->options);
	if (strstr(c->options, "--nccl "))
		fprintf(f, "\nREL (NCCL releases): %s\n", rels);
	if (strstr(c->options, "--topo "))
		fprintf(f, "TOPO: %s\n", topos);
}

static const struct host_cmd *find_cmd(const char *name)
{
	for (size_t i = 0; i < N_HOST_CMDS; i++)
		if (!strcmp(host_cmds[i].name, name))
			return &host_cmds[i];
	return NULL;
}

static int usage_error(const char *cmd, const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "mock_nccl_host %s: ", cmd);
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, " (see `mock_nccl_host %s --help`)\n", cmd);
	return -1;
}

struct opts {
	int release;
	const char *plugin;
	enum mock_topo topo;
	int ranks, nodes, threads, comms;
	long iters;
};

static int parse_num(const char *cmd, const char *k, const char *v, long min, long max,
		     long *out)
{
	char *end = NULL;
	errno = 0;
	long n = strtol(v, &end, 10);
	char range[64];
	if (!*v || *end || errno)
		return usage_error(cmd, "%s: '%s' is not an integer", k, v);
	if (n < min || n > max) {
		snprintf(range, sizeof(range), "%ld to %ld", min, max);
		return usage_error(cmd, "%s: out of range (%s)", k, range);
	}
	*out = n;
	return 0;
}

/* Options a command does not list are refused (stress --topo used to be ignored). */
static int parse_opts(const char *cmd, int argc, char **argv, struct opts *o)
{
	const struct host_cmd *c = find_cmd(cmd);
	o->release = 230;
	/* as NCCL: NCCL_TUNER_PLUGIN names the plugin (docs/quickstart.md runs against this) */
	o->plugin = getenv("NCCL_TUNER_PLUGIN") && *getenv("NCCL_TUNER_PLUGIN")
			    ? getenv("NCCL_TUNER_PLUGIN") : "ncclbpf";
	o->topo = MOCK_TOPO_NVLINK_NODE;
	o->ranks = 8;
	o->nodes = 1;
	o->threads = 8;
	o->comms = 4;
	o->iters = 20000;
	int topo_set = 0;
	for (int i = 0; i < argc; i++) {
		char key[64];
		const char *k = argv[i], *v = NULL, *eq = strchr(k, '=');
		if (eq && k[0] == '-' && (size_t)(eq - k) < sizeof(key)) {
			snprintf(key, sizeof(key), "%.*s", (int)(eq - k), k);
			k = key;
			v = eq + 1;
		}
		char pat[80];
		snprintf(pat, sizeof(pat), "  %s ", k);
		if (k[0] != '-' || !strstr(c->options, pat))
			return usage_error(cmd, "unknown %s '%s'", k[0] == '-' ? "option" : "argument",
					   argv[i]);
		if (!v && i + 1 >= argc)
			return usage_error(cmd, "%s needs a value%s", k, "");
		if (!v)
			v = argv[++i];
		long n = 0;
		if (!strcmp(k, "--nccl")) {
			o->release = mock_nccl_parse_release(v);
			if (o->release < 0) {
				char rels[256];
				releases_list(rels, sizeof(rels));
				return usage_error(cmd, "unsupported NCCL release '%s' (supported: %s)",
						   v, rels);
			}
		} else if (!strcmp(k, "--plugin")) {
			o->plugin = v;
		} else if (!strcmp(k, "--topo")) {
			int t;
			for (t = 0; t < MOCK_TOPO_COUNT; t++)
				if (!strcmp(v, mock_topo_name((enum mock_topo)t)))
					break;
			if (t == MOCK_TOPO_COUNT) {
				char topos[256];
				topo_list(topos, sizeof(topos));
				return usage_error(cmd, "unknown topology '%s' (valid: %s)", v, topos);
			}
			o->topo = (enum mock_topo)t;
			topo_set = 1;
		} else if (!strcmp(k, "--ranks")) {
			if (parse_num(cmd, k, v, 1, 65536, &n))
				return -1;
			o->ranks = (int)n;
		} else if (!strcmp(k, "--nodes")) {
			if (parse_num(cmd, k, v, 1, 65536, &n))
				return -1;
			o->nodes = (int)n;
		} else if (!strcmp(k, "--threads")) {
			if (parse_num(cmd, k, v, 1, 1024, &n))
				return -1;
			o->threads = (int)n;
		} else if (!strcmp(k, "--comms")) {
			if (parse_num(cmd, k, v, 1, 4096, &n))
				return -1;
			o->comms = (int)n;
		} else if (!strcmp(k, "--iters")) {
			if (parse_num(cmd, k, v, 1, 1000000000, &n))
				return -1;
			o->iters = n;
		}
	}
	if (o->nodes > o->ranks)
		return usage_error(cmd, "--nodes: more nodes than ranks%s%s", "", "");
	/* the cost table must be one this communicator can have */
	if (!topo_set) /* the shape of this communicator */
		o->topo = mock_topo_default(o->ranks, o->nodes);
	const char *why = strcmp(cmd, "simulate") ? NULL : mock_topo_mismatch(o->topo, o->ranks, o->nodes);
	if (why)
		return usage_error(cmd, "--topo %s: %s", mock_topo_name(o->topo), why);
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

/* What the plugin did with each NCCLBPF_POLICY entry, from its log lines: an entry that
 * was skipped (missing file, verifier rejection, ...) leaves NCCL's choice in place, and
 * the table below would otherwise look like a policy that decided nothing. */
static void print_policy_entries(void)
{
	char line[1024];
	int any = 0;
	for (int i = 0; (i = mock_log_find(i, 3, "ncclbpf: attached ", line, sizeof(line))) >= 0;
	     i++, any++)
		printf("  attached  %s\n", line + strlen("ncclbpf: attached "));
	for (int i = 0; (i = mock_log_find(i, 2, " skipped: ", line, sizeof(line))) >= 0;
	     i++, any++) {
		const char *p = strstr(line, "ncclbpf: policy "), *why = strstr(line, " skipped: ");
		p = p ? p + strlen("ncclbpf: policy ") : line;
		printf("  SKIPPED   %.*s: %s\n", (int)(why - p), p, why + strlen(" skipped: "));
	}
	if (any)
		printf("\n");
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
	print_policy_entries();
	printf("%-26s %-13s %9s  %-18s %-18s %s\n", "collective", "type", "bytes",
	       "NCCL default", "with policy", "channels");
	int bad = 0;
	for (size_t i = 0; i < sizeof(step) / sizeof(step[0]); i++) {
		float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		mock_cost_table(before, o->topo, step[i].coll, step[i].bytes, o->ranks, o->nodes);
		memcpy(after, before, sizeof(before));
		int nch = 0, da = -1, dp = -1, pa = -1, pp = -1;
		uint64_t i0[32] = {0}, i1[32] = {0};
		const char *inames[32] = {0};
		int nissues = mock_nccl_issue_counts(&m, i0, inames, 32);
		rc = mock_comm_get_coll_info(&c, step[i].coll, step[i].bytes, 1, 0, after, &nch);
		mock_nccl_issue_counts(&m, i1, NULL, 32);
		const char *issue = NULL; /* the plugin's reason for not applying a request */
		for (int k = 0; k < nissues && k < 32 && !issue; k++)
			if (i1[k] != i0[k])
				issue = inames[k];
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
		printf("%-26s %-13s %9s  %-18s %-18s %s%s%s\n", step[i].what,
		       mock_coll_name(step[i].coll), b, d, p, ch, issue ? "  ! " : "",
		       issue ? issue : "");
	}
	mock_comm_finalize(&c);
	printf("(* = the policy changed NCCL's algorithm/protocol; ! = the plugin did not apply "
	       "the policy's request, and why)  invariants: %s\n", bad ? "VIOLATED" : "all held");
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

/* What the host emulates of each release (the facts in mock_nccl.h and docs). */
static const char *release_emulates(int release)
{
	switch (release) {
	case 227: return "tuner v4 (no constants), <= 2.30 selection";
	case 228: return "tuner v5, 144 constants, <= 2.30 selection";
	case 229: return "tuner v5, <= 2.30 selection, broadcasts batched as AllGather";
	case 230: return "tuner v6 (getChunkSize), <= 2.30 selection, broadcasts batched";
	case 231: return "tuner v6, 2.31 selection (ties high, nChannels a cap, sym/CE kernels, "
			 "per-call algSelection)";
	case 232: return "tuner v7, 159 constants (5 compcap rows), 2.31 selection";
	default: return "?";
	}
}

static int cmd_versions(const struct opts *o)
{
	int bad = 0, n = 0;
	for (int minor = 10; minor < 60; minor++) {
		char rel[16];
		snprintf(rel, sizeof(rel), "2.%d", minor);
		int release = mock_nccl_parse_release(rel);
		if (release < 0)
			continue;
		struct mock_nccl m;
		struct opts oo = *o;
		oo.release = release;
		n++;
		if (load(&m, &oo)) {
			bad++;
			continue;
		}
		struct mock_comm c;
		int rc = mock_comm_init(&m, &c, 0xabc0ull + (uint64_t)n, 8, 1);
		float t[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		mock_cost_table(t, MOCK_TOPO_NVLINK_NODE, 4, MiB, 8, 1);
		int nch = 0, rc2 = rc ? -1 : mock_comm_get_coll_info(&c, 4, MiB, 1, 0, t, &nch);
		int rc3 = rc ? -1 : mock_comm_finalize(&c);
		int code = mock_nccl_version_code(release);
		printf("NCCL %d.%d (emulates %d.%d.%d: %s): opened %s, bound ncclTunerPlugin_v%d, "
		       "init %d, getCollInfo %d, finalize %d\n",
		       release / 100, release % 100, code / 10000, code / 100 % 100, code % 100,
		       release_emulates(release), m.opened_as, m.tuner_version, rc, rc2, rc3);
		bad += rc || rc2 || rc3;
		mock_nccl_unload(&m);
	}
	return bad ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fputs(host_usage, stderr);
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--markdown")) { /* the mock_nccl_host part of docs/cli.md */
		printf("\n## mock_nccl_host\n\n```\n%s```\n", host_usage);
		for (size_t i = 0; i < N_HOST_CMDS; i++) {
			printf("\n### mock_nccl_host %s\n\n```\n", host_cmds[i].name);
			print_cmd_help(stdout, &host_cmds[i]);
			printf("```\n");
		}
		return 0;
	}
	if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
		if (argc > 2 && strcmp(name, "help") == 0) {
			const struct host_cmd *c = find_cmd(argv[2]);
			if (!c) {
				fprintf(stderr, "mock_nccl_host: unknown command '%s' (simulate, stress, "
						"versions)\n", argv[2]);
				return EXIT_USAGE;
			}
			print_cmd_help(stdout, c);
			return 0;
		}
		fputs(host_usage, stdout);
		return 0;
	}
	const struct host_cmd *c = find_cmd(name);
	if (!c) {
		fprintf(stderr, "mock_nccl_host: unknown command '%s' (simulate, stress, versions; "
				"see `mock_nccl_host --help`)\n", name);
		return EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			print_cmd_help(stdout, c);
			return 0;
		}
	struct opts o;
	if (parse_opts(name, argc - 2, argv + 2, &o))
		return EXIT_USAGE;
	if (!strcmp(name, "simulate"))
		return cmd_simulate(&o);
	if (!strcmp(name, "stress"))
		return cmd_stress(&o);
	return cmd_versions(&o);
}

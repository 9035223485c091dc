/* ncclbpf bench: the tuner decision benchmark.
 *
 *   ncclbpf bench [--calls N] [--lib PATH] [--policy-dir DIR] [--policies a,b,...]
 *
 * For every policy, N getCollInfo calls (default 1 M) through the plugin library loaded
 * the way NCCL 2.29 loads it (the mock NCCL host's loader: dlopen RTLD_NOW|RTLD_LOCAL,
 * ncclTunerPlugin_v5), once with the interpreter (NCCLBPF_JIT=0) and once with the JIT.
 * The baseline is the native C version of the same policy (policies/native/) behind an
 * identical v5 getCollInfo shim compiled into this tool: same context fill, same
 * translation, no eBPF. Each configuration runs in its own child process because the
 * plugin reads NCCLBPF_POLICY / NCCLBPF_JIT once per process.
 *
 * Each call is timed individually (x86-64: lfence + rdtsc, calibrated against
 * CLOCK_MONOTONIC; the timer's own median cost is subtracted). The workload cycles
 * through a training step's (collective, size) mix with NCCL-like cost tables; the table
 * is restored outside the timed region, as NCCL builds a fresh one per call.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "mock_nccl.h"
#include "native_policies.h"
#include "plugin/comm_channels.h"
#include "plugin/tuner/tuner.h"

int cmd_bench(int argc, char **argv);

/* ---- timer ---- */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t tick_begin(void)
{
#if defined(__x86_64__)
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
#else
	return now_ns();
#endif
}

static inline uint64_t tick_end(void)
{
#if defined(__x86_64__)
	unsigned aux;
	uint64_t t = __rdtscp(&aux);
	_mm_lfence();
	return t;
#else
	return now_ns();
#endif
}

static double ticks_per_ns(void)
{
#if defined(__x86_64__)
	uint64_t n0 = now_ns(), t0 = __rdtsc();
	while (now_ns() - n0 < 50000000ull)
		;
	uint64_t n1 = now_ns(), t1 = __rdtsc();
	return (double)(t1 - t0) / (double)(n1 - n0);
#else
	return 1.0;
#endif
}

/* Smallest non-zero step of the timer, in ns (virtualized TSCs can tick in ~10 ns steps). */
static double timer_granularity_ns(double tpn)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 20000; i++) {
		uint64_t a = tick_begin(), b = tick_begin();
		while (b == a)
			b = tick_begin();
		if (b - a < best)
			best = b - a;
	}
	return (double)best / tpn;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* ---- the native baseline: a v5 getCollInfo shim around a native policy ---- */

static native_policy_fn native_fn;
struct native_comm {
	uint64_t comm_id;
	uint32_t n_ranks, n_nodes;
	uint64_t seq[NCCLBPF_NUM_COLLS];
};

static int native_init(void **ctx, uint64_t comm_id, size_t n_ranks, size_t n_nodes,
		       nb_nccl_logger_t log, struct nb_nccl_nvl_domain_info_v5 *nvl,
		       struct nb_nccl_tuner_constants_v5 *constants)
{
	(void)log;
	(void)nvl;
	(void)constants;
	struct native_comm *c = calloc(1, sizeof(*c));
	if (c) {
		c->comm_id = comm_id;
		c->n_ranks = (uint32_t)n_ranks;
		c->n_nodes = (uint32_t)n_nodes;
	}
	*ctx = c;
	return 0;
}

/* Mirrors tuner_get_coll_info (src/plugin/tuner/tuner_core.c) with the eBPF run replaced by a
 * direct call of the native policy. */
static int native_get_coll_info(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
				float **cost_table, int num_algo, int num_proto, int reg_buff,
				int *n_channels)
{
	struct native_comm *tc = ctx;
	if (!tc || !cost_table || !n_channels || coll_type < 0 ||
	    coll_type >= NCCLBPF_NUM_COLLS || num_algo <= 0 || num_proto <= 0)
		return 0;
	float *table = (float *)cost_table;
	struct ncclbpf_tuner_ctx c;
	c.comm_id = tc->comm_id;
	c.n_bytes = n_bytes;
	c.seq = tc->seq[coll_type]++;
	c.coll_type = (uint32_t)coll_type;
	c.n_ranks = tc->n_ranks;
	c.n_nodes = tc->n_nodes;
	c.num_pipe_ops = num_pipe_ops > 0 ? (uint32_t)num_pipe_ops : 0;
	c.reg_buff = reg_buff ? 1 : 0;
	int max_ch = tc->comm_id ? comm_channels_get(tc->comm_id) : 0;
	c.max_channels = max_ch > 0 ? (uint32_t)max_ch : 0;
	c.abi_version = 5;
	tuner_ctx_fill(&c, table, num_algo, num_proto);
	native_fn(&c);
	if (c.algo == NCCLBPF_ALGO_KEEP && c.proto == NCCLBPF_PROTO_KEEP &&
	    c.n_channels == NCCLBPF_CHANNELS_KEEP)
		return 0;
	struct tuner_applied applied;
	tuner_translate(table, num_algo, num_proto, c.algo, c.proto, c.n_channels, n_channels,
			&applied);
	return 0;
}

static int native_finalize(void *ctx)
{
	free(ctx);
	return 0;
}

static const struct nb_nccl_tuner_v5 native_tuner = {
	.name = "native",
	.init = native_init,
	.get_coll_info = native_get_coll_info,
	.finalize = native_finalize,
};

/* ---- measurement ---- */

struct bench_result {
	double p50_ns, p99_ns, mean_ns;
	int ok;
	char err[200];
};

#define N_WORK 16
struct work_item {
	int coll;
	size_t bytes;
	float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
};

static void build_work(struct work_item *w)
{
	static const struct {
		int coll;
		size_t bytes;
	} mix[N_WORK] = {
		{ 4, 8 },         { 4, 4096 },       { 4, 32768 },     { 4, 262144 },
		{ 4, 1 << 20 },   { 4, 4 << 20 },    { 4, 16 << 20 },  { 4, 25 << 20 },
		{ 4, 96 << 20 },  { 4, 512u << 20 }, { 2, 2 << 20 },   { 2, 48 << 20 },
		{ 3, 48 << 20 },  { 3, 160 << 20 },  { 0, 1024 },      { 1, 65536 },
	};
	for (int i = 0; i < N_WORK; i++) {
		w[i].coll = mix[i].coll;
		w[i].bytes = mix[i].bytes;
		mock_cost_table(w[i].table, MOCK_TOPO_NVLINK_NODE, mix[i].coll, mix[i].bytes, 8, 1);
	}
}

/* Stands in for getCollInfo when measuring the harness itself (table copy, loop, call). */
static int empty_get_coll_info(void *ctx, int coll_type, size_t n_bytes, int num_pipe_ops,
			       float **cost_table, int num_algo, int num_proto, int reg_buff,
			       int *n_channels)
{
	(void)ctx, (void)coll_type, (void)n_bytes, (void)num_pipe_ops, (void)cost_table;
	(void)num_algo, (void)num_proto, (void)reg_buff, (void)n_channels;
	__asm__ volatile("" ::: "memory");
	return 0;
}

typedef int (*get_coll_info_fn)(void *, int, size_t, int, float **, int, int, int, int *);

/* Ticks for `batch` calls timed as one region (table restored before each call). */
static uint64_t run_batch(get_coll_info_fn fn, void *ctx, struct work_item *work, long base,
			  int batch)
{
	float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	int nch;
	uint64_t a = tick_begin();
	for (int k = 0; k < batch; k++) {
		struct work_item *w = &work[(base + k) % N_WORK];
		memcpy(table, w->table, sizeof(table));
		nch = 0;
		fn(ctx, w->coll, w->bytes, 1, (float **)table, MOCK_NUM_ALGOS, MOCK_NUM_PROTOS, 0,
		   &nch);
	}
	return tick_end() - a;
}

/* batch == 1: every call timed alone (fine-grained timers), the timer's median cost
 * subtracted. batch > 1 (coarse timers, e.g. virtualized TSCs): each sample is the mean of
 * `batch` consecutive calls timed as one region, minus the mean cost of the same loop
 * around an empty function. P99 is then a P99 of batch means (understates single-call
 * tails). */
static void measure(const struct nb_nccl_tuner_v5 *t, long calls, int batch, double tpn,
		    struct bench_result *r)
{
	void *ctx = NULL;
	struct nb_nccl_nvl_domain_info_v5 nvl = { 1, 8, 8 };
	double constants[144] = { 0 };
	if (t->init(&ctx, 0xbe7c4ull, 8, 1, mock_logger, &nvl,
		    (struct nb_nccl_tuner_constants_v5 *)constants) != 0) {
		snprintf(r->err, sizeof(r->err), "init failed");
		return;
	}
	struct work_item work[N_WORK];
	build_work(work);
	long n_samples = calls / batch;
	uint32_t *samples = malloc((size_t)(n_samples > 100000 ? n_samples : 100000) *
				   sizeof(*samples));
	if (!samples) {
		snprintf(r->err, sizeof(r->err), "out of memory");
		t->finalize(ctx);
		return;
	}
	get_coll_info_fn volatile empty = empty_get_coll_info;
	double overhead; /* ticks per sample */
	if (batch == 1) {
		for (long i = 0; i < 100000; i++) {
			uint64_t a = tick_begin();
			uint64_t b = tick_end();
			samples[i] = (uint32_t)(b - a);
		}
		qsort(samples, 100000, sizeof(*samples), cmp_u32);
		overhead = samples[50000];
	} else {
		double sum = 0;
		long n = 200000 / batch + 1;
		for (long i = 0; i < n; i++)
			sum += (double)run_batch(empty, NULL, work, i * batch, batch);
		overhead = sum / (double)n;
	}

	for (long i = 0; i < 20000 / batch + 1; i++) /* warm-up */
		run_batch(t->get_coll_info, ctx, work, i * batch, batch);

	double sum = 0;
	for (long s = 0; s < n_samples; s++) {
		double d;
		if (batch == 1) {
			float table[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
			struct work_item *w = &work[s % N_WORK];
			int nch = 0;
			memcpy(table, w->table, sizeof(table));
			uint64_t a = tick_begin();
			t->get_coll_info(ctx, w->coll, w->bytes, 1, (float **)table, MOCK_NUM_ALGOS,
					 MOCK_NUM_PROTOS, 0, &nch);
			d = (double)(tick_end() - a) - overhead;
		} else {
			d = (double)run_batch(t->get_coll_info, ctx, work, s * batch, batch) - overhead;
		}
		samples[s] = d <= 0 ? 0 : d > UINT32_MAX ? UINT32_MAX : (uint32_t)(d + 0.5);
		sum += (double)samples[s];
	}
	qsort(samples, (size_t)n_samples, sizeof(*samples), cmp_u32);
	r->p50_ns = samples[n_samples / 2] / tpn / batch;
	r->p99_ns = samples[(long)((double)n_samples * 0.99)] / tpn / batch;
	r->mean_ns = sum / (double)n_samples / tpn / batch;
	r->ok = 1;
	free(samples);
	t->finalize(ctx);
}

enum mode { MODE_NATIVE, MODE_INTERP, MODE_JIT, MODE_COUNT };
static const char *const mode_names[MODE_COUNT] = { "native", "interpreter", "JIT" };

struct bench_cfg {
	const char *lib;
	const char *policy_dir;
	long calls;
	int batch;
	int rounds;
	double tpn;
};

/* Runs one (policy, mode) in a child; the result comes back through a pipe. */
static void run_one(const struct bench_cfg *cfg, const char *policy, enum mode mode,
		    struct bench_result *r)
{
	memset(r, 0, sizeof(*r));
	int fds[2];
	if (pipe(fds) != 0) {
		snprintf(r->err, sizeof(r->err), "pipe: %s", strerror(errno));
		return;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(r->err, sizeof(r->err), "fork: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return;
	}
	if (pid == 0) {
		struct bench_result cr;
		memset(&cr, 0, sizeof(cr));
		close(fds[0]);
		if (mode == MODE_NATIVE) {
			const struct native_policy *np = native_policy_find(policy);
			if (!np) {
				snprintf(cr.err, sizeof(cr.err), "no native version of %s", policy);
			} else {
				native_fn = np->fn;
				measure(&native_tuner, cfg->calls, cfg->batch, cfg->tpn, &cr);
			}
		} else {
			char path[2200];
			snprintf(path, sizeof(path), "%.1100s/%.1000s.bpf.o", cfg->policy_dir, policy);
			setenv("NCCLBPF_POLICY", path, 1);
			setenv("NCCLBPF_JIT", mode == MODE_JIT ? "1" : "0", 1);
			struct mock_nccl m;
			/* NCCL 2.29 binds ncclTunerPlugin_v5, like the native shim. */
			int rc = mock_nccl_load_tuner(&m, 229, cfg->lib, 0);
			if (rc) {
				snprintf(cr.err, sizeof(cr.err), "%.190s", m.err);
			} else {
				measure(m.tuner, cfg->calls, cfg->batch, cfg->tpn, &cr);
				char needle[300];
				snprintf(needle, sizeof(needle), "%s.bpf.o:", policy);
				if (cr.ok && mock_log_count(needle) == 0) {
					cr.ok = 0;
					snprintf(cr.err, sizeof(cr.err), "policy %.170s did not attach", path);
				} else if (cr.ok && mode == MODE_JIT && mock_log_count("(JIT)") == 0) {
					cr.ok = 0;
					snprintf(cr.err, sizeof(cr.err), "policy %s is not JIT-compiled",
						 policy);
				}
			}
		}
		ssize_t w = write(fds[1], &cr, sizeof(cr));
		_exit(w == (ssize_t)sizeof(cr) ? 0 : 1);
	}
	close(fds[1]);
	ssize_t n = read(fds[0], r, sizeof(*r));
	close(fds[0]);
	int st;
	waitpid(pid, &st, 0);
	if (n != (ssize_t)sizeof(*r)) {
		memset(r, 0, sizeof(*r));
		snprintf(r->err, sizeof(r->err), "child died (status 0x%x)", st);
	}
}

static void exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0) {
		snprintf(buf, len, ".");
		return;
	}
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}

static void cpu_model(char *buf, size_t len)
{
	snprintf(buf, len, "unknown CPU");
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return;
	char line[256];
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "model name", 10)) {
			char *c = strchr(line, ':');
			if (c) {
				c += 2;
				c[strcspn(c, "\n")] = '\0';
				snprintf(buf, len, "%s", c);
			}
			break;
		}
	}
	fclose(f);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: ncclbpf bench [--calls N] [--lib PATH] [--policy-dir DIR] "
		"[--policies a,b,...] [--batch B] [--rounds R]\n"
		"  N getCollInfo calls (default 1000000) per policy for the native baseline, the\n"
		"  interpreter and the JIT; prints P50/P99 ns and the overhead over native.\n");
}

int cmd_bench(int argc, char **argv)
{
	char dir[1024], lib[1100], pdir[1100];
	exe_dir(dir, sizeof(dir));
	snprintf(lib, sizeof(lib), "%s/libncclbpf.so", dir);
	snprintf(pdir, sizeof(pdir), "%s/policies", dir);
	struct bench_cfg cfg = { .lib = lib, .policy_dir = pdir, .calls = 1000000, .rounds = 0 };
	const char *policies = "noop,size_aware,lookup_only,lookup_update,nvlink_ring_mid,"
			       "table_rules,bad_channels";

	for (int i = 1; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage();
			return 0;
		}
		if (!v) {
			usage();
			return 2;
		}
		if (!strcmp(argv[i], "--calls"))
			cfg.calls = atol(v);
		else if (!strcmp(argv[i], "--rounds"))
			cfg.rounds = atoi(v);
		else if (!strcmp(argv[i], "--batch"))
			cfg.batch = atoi(v);
		else if (!strcmp(argv[i], "--lib"))
			cfg.lib = v;
		else if (!strcmp(argv[i], "--policy-dir"))
			cfg.policy_dir = v;
		else if (!strcmp(argv[i], "--policies"))
			policies = v;
		else {
			usage();
			return 2;
		}
	}
	if (cfg.calls < 1000) {
		fprintf(stderr, "ncclbpf bench: --calls must be >= 1000\n");
		return 2;
	}
	cfg.tpn = ticks_per_ns();
	double gran = timer_granularity_ns(cfg.tpn);
	if (cfg.batch <= 0) /* auto: single calls when the timer resolves ~1 ns */
		cfg.batch = gran <= 2.0 ? 1 : 32;
	if (cfg.rounds <= 0 || cfg.rounds > 50)
		cfg.rounds = 5;
	if (cfg.batch > 1024)
		cfg.batch = 1024;
	char cpu[200];
	cpu_model(cpu, sizeof(cpu));
	printf("tuner decision benchmark: %ld getCollInfo calls per row, ncclTunerPlugin_v5 via "
	       "dlopen(%s)\n%s; timer %.3f ticks/ns, step %.1f ns; %s\n\n",
	       cfg.calls, cfg.lib, cpu, cfg.tpn, gran,
	       cfg.batch == 1 ? "every call timed alone"
			      : "percentiles over batch means");
	if (cfg.batch > 1)
		printf("(the timer is too coarse to time one call: each sample is the mean of %d "
		       "consecutive calls, so P99 understates single-call tails)\n\n", cfg.batch);
	printf("%-16s %17s %25s %25s\n", "policy", "native P50/P99", "interpreter P50/P99 (+P50)",
	       "JIT P50/P99 (+P50)");

	/* Rounds interleave every configuration, so slow drifts of a shared machine hit all
	 * of them; the table reports the median over rounds of each percentile. */
	char *list = strdup(policies);
	if (!list)
		return 1;
	const char *names[64];
	int n_pol = 0;
	char *save = NULL;
	for (char *p = strtok_r(list, ",", &save); p && n_pol < 64; p = strtok_r(NULL, ",", &save))
		names[n_pol++] = p;
	struct bench_result(*res)[MODE_COUNT] = calloc((size_t)n_pol * (size_t)cfg.rounds,
						       sizeof(*res));
	if (!res) {
		free(list);
		return 1;
	}
	for (int round = 0; round < cfg.rounds; round++)
		for (int i = 0; i < n_pol; i++)
			for (int m = 0; m < MODE_COUNT; m++)
				run_one(&cfg, names[i], (enum mode)m, &res[round * n_pol + i][m]);
	int failed = 0;
	for (int i = 0; i < n_pol; i++) {
		struct bench_result r[MODE_COUNT];
		for (int m = 0; m < MODE_COUNT; m++) {
			double p50[50], p99[50];
			int n = 0;
			memset(&r[m], 0, sizeof(r[m]));
			for (int round = 0; round < cfg.rounds; round++) {
				const struct bench_result *x = &res[round * n_pol + i][m];
				if (!x->ok) {
					r[m] = *x;
					break;
				}
				p50[n] = x->p50_ns;
				p99[n] = x->p99_ns;
				n++;
			}
			if (n != cfg.rounds)
				continue;
			r[m].ok = 1;
			r[m].p50_ns = median(p50, n);
			r[m].p99_ns = median(p99, n);
		}
		char cols[MODE_COUNT][64];
		for (int m = 0; m < MODE_COUNT; m++) {
			if (!r[m].ok)
				snprintf(cols[m], sizeof(cols[m]), "failed");
			else if (m == MODE_NATIVE || !r[MODE_NATIVE].ok)
				snprintf(cols[m], sizeof(cols[m]), "%.1f / %.1f", r[m].p50_ns,
					 r[m].p99_ns);
			else
				snprintf(cols[m], sizeof(cols[m]), "%.1f / %.1f (%+.1f)", r[m].p50_ns,
					 r[m].p99_ns, r[m].p50_ns - r[MODE_NATIVE].p50_ns);
		}
		printf("%-16s %17s %25s %25s\n", names[i], cols[0], cols[1], cols[2]);
		for (int m = 0; m < MODE_COUNT; m++) {
			if (!r[m].ok) {
				failed++;
				fprintf(stderr, "  %s %s: %s\n", names[i], mode_names[m], r[m].err);
			}
		}
	}
	free(res);
	free(list);
	printf("\nns per call, harness cost subtracted, median of %d rounds; (+x) = P50 over the "
	       "native baseline.\n", cfg.rounds);
	return failed ? 1 : 0;
}

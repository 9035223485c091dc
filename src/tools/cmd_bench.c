/* ncclbpf bench: the tuner decision benchmark.
 *
 *   ncclbpf bench [--calls N] [--lib PATH] [--policy-dir DIR] [--policies a,b,...]
 *
 * For every policy, N getCollInfo calls (default 1 M) through the plugin library loaded
 * the way NCCL 2.29 loads it (the mock NCCL host's loader: dlopen RTLD_NOW|RTLD_LOCAL,
 * ncclTunerPlugin_v5), once with the interpreter (NCCLBPF_JIT=0) and once with the JIT.
 * The baseline is the native C version of the same policy (policies/native/) behind an
 * identical v5 getCollInfo shim compiled into this tool (bench/native_tuner_shim.c): same
 * context fill, same translation and pinning, no eBPF. A policy without a native twin (any
 * user policy, given as a path) is measured against NCCL's own choice through the same shim
 * (the native noop: the decision NCCL makes without a policy, at the shim's cost). Each configuration runs in its own child process because the
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
#include "native_tuner_shim.h"
#include "plugin/tuner/tuner.h"
#include "loader/object.h"
#include "tools/cli.h"

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

/* ---- the native baseline: bench/native_tuner_shim.c ---- */

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

/* One --policies entry: a shipped policy by name (DIR/NAME.bpf.o, its native twin as the
 * baseline) or any object by path (NCCL's own choice as the baseline). */
struct bench_policy {
	char name[256];  /* what the table shows */
	char path[2200]; /* the object */
	const struct native_policy *twin; /* NULL: baseline is NCCL's choice (native noop) */
};

/* Runs one (policy, mode) in a child; the result comes back through a pipe. */
static void run_one(const struct bench_cfg *cfg, const struct bench_policy *policy,
		    enum mode mode, struct bench_result *r)
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
			const struct native_policy *np = policy->twin ? policy->twin
							: native_policy_find("noop");
			if (!np) {
				snprintf(cr.err, sizeof(cr.err), "no native noop baseline");
			} else {
				native_shim_policy = np->fn;
				measure(&native_tuner_shim, cfg->calls, cfg->batch, cfg->tpn, &cr);
			}
		} else {
			const char *path = policy->path;
			setenv("NCCLBPF_POLICY", path, 1);
			setenv("NCCLBPF_JIT", mode == MODE_JIT ? "1" : "0", 1);
			struct mock_nccl m;
			/* NCCL 2.29 binds ncclTunerPlugin_v5, like the native shim. */
			int rc = mock_nccl_load_tuner(&m, 229, cfg->lib, 0);
			if (rc) {
				snprintf(cr.err, sizeof(cr.err), "%.190s", m.err);
			} else {
				measure(m.tuner, cfg->calls, cfg->batch, cfg->tpn, &cr);
				/* the runtime's INFO line for this very file ("attached PATH:prog") */
				char needle[2300];
				snprintf(needle, sizeof(needle), "attached %.2200s:", path);
				if (cr.ok && mock_log_count(needle) == 0) {
					cr.ok = 0;
					snprintf(cr.err, sizeof(cr.err), "policy %.170s did not attach", path);
				} else if (cr.ok && mode == MODE_JIT && mock_log_count("(JIT)") == 0) {
					cr.ok = 0;
					snprintf(cr.err, sizeof(cr.err), "policy %.150s is not JIT-compiled",
						 policy->name);
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

static const char bench_help[] =
	"Per-decision cost of tuner policies: for each policy, N getCollInfo calls through\n"
	"the plugin library loaded as NCCL 2.29 loads it (dlopen, ncclTunerPlugin_v5), with\n"
	"the interpreter and with the JIT, against a baseline behind an identical shim: the\n"
	"native C version of the same policy (policies/native/) for a shipped policy given\n"
	"by name, NCCL's own choice (the shim keeping NCCL's decision) for a policy without\n"
	"a native twin, e.g. your own given as a path. Each configuration runs in its own\n"
	"process; rounds interleave all of them. Prints P50 / P99 in nanoseconds per call\n"
	"(timer cost subtracted) and the P50 overhead over the baseline.\n"
	"\n"
	"options:\n"
	"  --calls N         calls per policy and mode, 1000 to 10^9 (default 1000000)\n"
	"  --policies a,b    shipped policy names (DIR/NAME.bpf.o) or paths of any .bpf.o\n"
	"                    (with a '/' or ending in .bpf.o); default: noop, size_aware,\n"
	"                    lookup_only, lookup_update, nvlink_ring_mid, table_rules,\n"
	"                    bad_channels\n"
	"  --policy-dir DIR  where the .bpf.o files are (default: policies/ next to this\n"
	"                    program, i.e. build/policies)\n"
	"  --lib PATH        the plugin library (default: libncclbpf.so next to this program)\n"
	"  --rounds R        interleaved rounds, 1 to 50 (default 5); the table shows the\n"
	"                    median over rounds\n"
	"  --batch B         calls timed as one sample, 1 to 1024 (default: 1 when the timer\n"
	"                    resolves ~1 ns, else 32)\n"
	"  --json            one JSON document (below) instead of the table\n"
	"\n"
	"exit status: 0 every row measured; 1 a policy missing, not a regular file, not\n"
	"attached or a run failed (the row says which); 2 usage error.\n"
	"\n"
	"json (schema \"ncclbpf.bench/1\"):\n"
	"  {\"schema\", \"cpu\", \"library\": strings, \"calls\", \"rounds\", \"batch\": numbers,\n"
	"   \"unit\": \"ns\", \"timer_ticks_per_ns\", \"timer_step_ns\": numbers,\n"
	"   \"results\": [{\"policy\": string, \"baseline\": \"native\" (the twin) or\n"
	"      \"nccl\" (NCCL's own choice), \"native\" (the baseline's numbers),\n"
	"      \"interpreter\", \"jit\": {\"p50_ns\", \"p99_ns\": numbers, \"overhead_p50_ns\":\n"
	"      number or null (over the baseline), \"error\": string or null}}]}\n";

static int cmd_bench(int argc, char **argv)
{
	char dir[1024], lib[1100], pdir[1100];
	cli_exe_dir(dir, sizeof(dir));
	snprintf(lib, sizeof(lib), "%s/libncclbpf.so", dir);
	snprintf(pdir, sizeof(pdir), "%s/policies", dir);
	struct bench_cfg cfg = { .lib = lib, .policy_dir = pdir, .calls = 1000000, .rounds = 5 };
	const char *policies = "noop,size_aware,lookup_only,lookup_update,nvlink_ring_mid,"
			       "table_rules,bad_channels";
	bool json = false;

	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		long long n;
		int r;
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if ((r = cli_opt_value("bench", argc, argv, &i, "--calls", &v)) != 0) {
			if (r < 0 || cli_parse_range("bench", "--calls", v, 1000, 1000000000, &n))
				return CLI_EXIT_USAGE;
			cfg.calls = (long)n;
		} else if ((r = cli_opt_value("bench", argc, argv, &i, "--rounds", &v)) != 0) {
			if (r < 0 || cli_parse_range("bench", "--rounds", v, 1, 50, &n))
				return CLI_EXIT_USAGE;
			cfg.rounds = (int)n;
		} else if ((r = cli_opt_value("bench", argc, argv, &i, "--batch", &v)) != 0) {
			if (r < 0 || cli_parse_range("bench", "--batch", v, 1, 1024, &n))
				return CLI_EXIT_USAGE;
			cfg.batch = (int)n;
		} else if ((r = cli_opt_value("bench", argc, argv, &i, "--lib", &v)) != 0) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			cfg.lib = v;
		} else if ((r = cli_opt_value("bench", argc, argv, &i, "--policy-dir", &v)) != 0) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			cfg.policy_dir = v;
		} else if ((r = cli_opt_value("bench", argc, argv, &i, "--policies", &v)) != 0) {
			if (r < 0)
				return CLI_EXIT_USAGE;
			policies = v;
		} else {
			return cli_usage_error("bench", "unknown argument '%s'", argv[i]);
		}
	}

	char *list = strdup(policies);
	if (!list)
		return CLI_EXIT_REFUSED;
	static struct bench_policy pols[64];
	int n_pol = 0;
	char *save = NULL;
	for (char *p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (n_pol == 64) {
			free(list);
			return cli_usage_error("bench", "--policies: more than 64 names");
		}
		struct bench_policy *bp = &pols[n_pol++];
		size_t l = strlen(p);
		if (strchr(p, '/') || (l > 6 && !strcmp(p + l - 6, ".bpf.o"))) {
			const char *base = strrchr(p, '/');
			snprintf(bp->path, sizeof(bp->path), "%s", p);
			snprintf(bp->name, sizeof(bp->name), "%s", base ? base + 1 : p);
			bp->twin = NULL; /* any object: measured against NCCL's own choice */
		} else {
			snprintf(bp->name, sizeof(bp->name), "%s", p);
			snprintf(bp->path, sizeof(bp->path), "%.1100s/%.1000s.bpf.o", cfg.policy_dir, p);
			bp->twin = native_policy_find(p);
		}
	}
	if (!n_pol) {
		free(list);
		return cli_usage_error("bench", "--policies: no policy named");
	}
	/* Every policy must exist before anything is measured: a missing file would load as
	 * pass-through and time the plugin without a policy. */
	if (access(cfg.lib, R_OK) != 0) {
		cli_error("bench", "library %s: %s", cfg.lib, strerror(errno));
		free(list);
		return CLI_EXIT_REFUSED;
	}
	for (int i = 0; i < n_pol; i++) {
		char why[256];
		int fd = loader_open_regular(pols[i].path, why, sizeof(why));
		if (fd < 0) {
			cli_error("bench", "policy '%s' (%s): %s", pols[i].name, pols[i].path, why);
			free(list);
			return CLI_EXIT_REFUSED;
		}
		close(fd);
	}

	int wn = 16; /* the name column fits the longest name */
	for (int i = 0; i < n_pol; i++)
		if ((int)strlen(pols[i].name) > wn)
			wn = (int)strlen(pols[i].name);
	cfg.tpn = ticks_per_ns();
	double gran = timer_granularity_ns(cfg.tpn);
	if (cfg.batch <= 0) /* auto: single calls when the timer resolves ~1 ns */
		cfg.batch = gran <= 2.0 ? 1 : 32;
	char cpu[200];
	cpu_model(cpu, sizeof(cpu));
	if (!json) {
		printf("tuner decision benchmark: %ld getCollInfo calls per row, ncclTunerPlugin_v5 "
		       "via dlopen(%s)\n%s; timer %.3f ticks/ns, step %.1f ns; %s\n\n",
		       cfg.calls, cfg.lib, cpu, cfg.tpn, gran,
		       cfg.batch == 1 ? "every call timed alone" : "percentiles over batch means");
		if (cfg.batch > 1)
			printf("(the timer is too coarse to time one call: each sample is the mean of "
			       "%d consecutive calls, so P99 understates single-call tails)\n\n",
			       cfg.batch);
		printf("%-*s %-8s %21s %29s %29s\n", wn, "policy", "baseline", "P50/P99 ns",
		       "interpreter P50/P99 (+P50) ns", "JIT P50/P99 (+P50) ns");
		fflush(stdout);
	}

	/* Rounds interleave every configuration, so slow drifts of a shared machine hit all
	 * of them; the table reports the median over rounds of each percentile. */
	struct bench_result(*res)[MODE_COUNT] = calloc((size_t)n_pol * (size_t)cfg.rounds,
						       sizeof(*res));
	struct bench_result(*fin)[MODE_COUNT] = calloc((size_t)n_pol, sizeof(*fin));
	if (!res || !fin) {
		free(res);
		free(fin);
		free(list);
		return CLI_EXIT_REFUSED;
	}
	for (int round = 0; round < cfg.rounds; round++)
		for (int i = 0; i < n_pol; i++)
			for (int m = 0; m < MODE_COUNT; m++)
				run_one(&cfg, &pols[i], (enum mode)m, &res[round * n_pol + i][m]);
	int failed = 0;
	for (int i = 0; i < n_pol; i++) {
		struct bench_result *r = fin[i];
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
			if (n != cfg.rounds) {
				failed++;
				continue;
			}
			r[m].ok = 1;
			r[m].p50_ns = median(p50, n);
			r[m].p99_ns = median(p99, n);
		}
		if (json)
			continue;
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
		printf("%-*s %-8s %21s %29s %29s\n", wn, pols[i].name, pols[i].twin ? "native" : "NCCL",
		       cols[0], cols[1], cols[2]);
		for (int m = 0; m < MODE_COUNT; m++)
			if (!r[m].ok)
				fprintf(stderr, "  %s %s: %s\n", pols[i].name,
					m == MODE_NATIVE ? "baseline" : mode_names[m], r[m].err);
	}
	if (json) {
		static const char *const keys[MODE_COUNT] = { "native", "interpreter", "jit" };
		struct cli_json j;
		cli_json_init(&j, stdout);
		cli_json_object(&j, NULL);
		cli_json_str(&j, "schema", "ncclbpf.bench/1");
		cli_json_str(&j, "cpu", cpu);
		cli_json_str(&j, "library", cfg.lib);
		cli_json_int(&j, "calls", cfg.calls);
		cli_json_int(&j, "rounds", cfg.rounds);
		cli_json_int(&j, "batch", cfg.batch);
		cli_json_str(&j, "unit", "ns");
		cli_json_num(&j, "timer_ticks_per_ns", cfg.tpn);
		cli_json_num(&j, "timer_step_ns", gran);
		cli_json_array(&j, "results");
		for (int i = 0; i < n_pol; i++) {
			cli_json_object(&j, NULL);
			cli_json_str(&j, "policy", pols[i].name);
			cli_json_str(&j, "baseline", pols[i].twin ? "native" : "nccl");
			for (int m = 0; m < MODE_COUNT; m++) {
				const struct bench_result *r = &fin[i][m];
				cli_json_object(&j, keys[m]);
				if (r->ok) {
					cli_json_num(&j, "p50_ns", r->p50_ns);
					cli_json_num(&j, "p99_ns", r->p99_ns);
				} else {
					cli_json_null(&j, "p50_ns");
					cli_json_null(&j, "p99_ns");
				}
				if (m != MODE_NATIVE && r->ok && fin[i][MODE_NATIVE].ok)
					cli_json_num(&j, "overhead_p50_ns",
						     r->p50_ns - fin[i][MODE_NATIVE].p50_ns);
				else
					cli_json_null(&j, "overhead_p50_ns");
				cli_json_str(&j, "error", r->ok ? NULL : r->err);
				cli_json_end(&j);
			}
			cli_json_end(&j);
		}
		cli_json_end(&j);
		cli_json_end(&j);
		cli_json_finish(&j);
	} else {
		printf("\nns per call, harness cost subtracted, median of %d rounds; (+x) = P50 over "
		       "the baseline:\nnative = the policy's C twin (policies/native/); NCCL = no "
		       "twin, NCCL's own choice through\nthe same shim (what the decision costs "
		       "without a policy).\n", cfg.rounds);
	}
	free(res);
	free(fin);
	free(list);
	return failed ? CLI_EXIT_REFUSED : CLI_EXIT_OK;
}

NCCLBPF_CLI_COMMAND(bench, .name = "bench", .run = cmd_bench,
		    .synopsis = "[--calls N] [--policies a,b] [--policy-dir DIR] [--lib PATH] "
				"[--rounds R] [--batch B] [--json]",
		    .summary = "per-decision cost of tuner policies against native C (ns)",
		    .help = bench_help);

/* Decision provenance (issue 27): who decided each collective, everywhere it is reported.
 * The tuner (linked in, driven as NCCL 2.30 does) and the profiler (the mock host's v7
 * events) run the same collectives of one communicator; prov_split.bpf.o holds two
 * programs: `first` decides >= 1 MiB, `second` 64 KiB..1 MiB, both keep NCCL's choice below.
 * Checked: `ctl status` counters per source (through the control socket), the decision log
 * ("src", "policy": name@version, and `ncclbpf decisions` still accepts it), the metrics
 * file's source/policy labels and per-source decision counters, the timeline's coll_done
 * and `ncclbpf trace`'s Perfetto args; NCCL_ALGO as the environment's decision, an inner
 * native tuner's, NCCL's own without a policy, and a collective the tuner never saw
 * ("unknown", counted as a miss).
 * With --straight: no consumer of provenance, so decisions take the straight path and the
 * status counters are derived (runtime_comm_sources); they must come out the same.
 * With --job DIR: a mock-host job for run_prometheus.sh, writing ncclbpf_<pid>.prom into DIR
 * (the node-exporter textfile directory) and nothing else.
 * Usage: test_provenance PROV_SPLIT.bpf.o FAKE_TUNER.so | PROV_SPLIT.bpf.o --straight |
 *        PROV_SPLIT.bpf.o --job DIR */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/chain/chain.h"
#include "plugin/metrics/metrics.h"
#include "plugin/provenance.h"
#include "plugin/tuner/tuner.h"
#include "prof_test_util.h"
#include "prom_parse.h"
#include "runtime/control.h"
#include "runtime/control_proto.h"
#include "runtime/runtime.h"
#include "test_util.h"

int cmd_trace(int argc, char **argv);
int cmd_decisions(int argc, char **argv);

static char dir[128];
static const char *obj;

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 23);
	size_t n = buf ? fread(buf, 1, (1 << 23) - 1, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = 0;
	return buf;
}

/* Lines of text containing every needle. */
static int count_lines(const char *text, const char *const *needles)
{
	int n = 0;
	for (const char *p = text; p && *p;) {
		const char *e = strchr(p, '\n');
		size_t len = e ? (size_t)(e - p) : strlen(p);
		char line[2048];
		if (len >= sizeof(line))
			len = sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = 0;
		bool all = true;
		for (int i = 0; needles[i] && all; i++)
			all = strstr(line, needles[i]) != NULL;
		n += all;
		p = e ? e + 1 : p + len;
	}
	return n;
}

static double prom(const char *text, const char *name, const char *const *labels)
{
	double v = NAN;
	if (prom_find(text, name, labels, &v) != 0) {
		fprintf(stderr, "no unique sample %s", name);
		for (int i = 0; labels[i]; i++)
			fprintf(stderr, " %s", labels[i]);
		fprintf(stderr, "\n");
	}
	return v;
}

static const uint64_t sizes[3] = {16u << 10, 256u << 10, 4u << 20};

/* One AllReduce of n bytes: getCollInfo, then its profiler events (when pc). */
static void collective(void *tuner, struct ph_comm *pc, uint64_t n)
{
	float table[7][3];
	for (int i = 0; i < 21; i++)
		table[i / 3][i % 3] = 10.0f + (float)i;
	int nch = 0;
	if (tuner)
		tuner_get_coll_info(tuner, NCCLBPF_COLL_ALLREDUCE, n, 1, (float **)table, 7, 3, 0,
				    &nch);
	if (pc) {
		struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = n / 4,
				    .algo = NCCLBPF_ALGO_RING, .proto = NCCLBPF_PROTO_SIMPLE,
				    .n_channels = nch ? nch : 8, .gpu_ns = 20000};
		ph_coll_run(pc, &k);
	}
}

static void sources_of(void *tuner, uint64_t *out)
{
	runtime_comm_sources(&((struct tuner_comm *)tuner)->stats, out);
}

static uint64_t load_split(char *first, char *second, size_t len)
{
	char spec[600];
	snprintf(spec, sizeof(spec), "%s:first,%s:second", obj, obj);
	CHECK(runtime_load_policies(spec) == 2);
	const struct nb_hook_chain *c = runtime_hook_chain(NB_HOOK_TUNER);
	uint64_t v = c ? c->version : 0;
	snprintf(first, len, "prov_split.bpf.o:first@%llu", (unsigned long long)v);
	snprintf(second, len, "prov_split.bpf.o:second@%llu", (unsigned long long)v);
	return v;
}

#define N 30 /* collectives per run: 10 per size */

static void test_policy(void)
{
	char first[96], second[96];
	load_split(first, second, sizeof(first));
	void *t = NULL;
	tuner_comm_open(6, 0xabc, 4, 1, NULL, &t);
	CHECK(t != NULL);
	if (!t)
		return;
	struct ph_host h;
	ph_open_table(&h, 7, prof_table(7));
	struct ph_comm pc;
	CHECK(ph_comm_init(&h, &pc, 0xabc, "prov", 1, 4, 0) == 0);
	for (int i = 0; i < N; i++)
		collective(t, &pc, sizes[i % 3]);

	uint64_t src[NB_DSRC_COUNT];
	sources_of(t, src);
	CHECK_EQ_U64(src[NB_DSRC_POLICY], 20);
	CHECK_EQ_U64(src[NB_DSRC_PINNED], 10);
	CHECK_EQ_U64(src[NB_DSRC_NCCL] + src[NB_DSRC_ENV] + src[NB_DSRC_UNKNOWN], 0);

	/* `ncclbpf ctl status --json`, through the socket */
	const char *sock = runtime_control_path();
	CHECK(sock && *sock);
	int st = -1;
	char *reply = NULL, err[256] = "";
	size_t rlen = 0;
	int rc = runtime_control_call(sock, NBC_OP_STATUS, NBC_FLAG_JSON, 0, NULL, 10000, &st,
				      &reply, &rlen, err, sizeof(err));
	if (rc)
		fprintf(stderr, "status: %s\n", err);
	CHECK(rc == 0 && st == 0);
	CHECK_STR_CONTAINS(reply, "\"comm\":\"0x0000000000000abc\"");
	CHECK_STR_CONTAINS(reply, "\"sources\":{\"unknown\":0,\"nccl\":0,\"policy\":20,\"pinned\":10,"
				  "\"env\":0,\"call\":0,\"fallback\":0,\"inner\":0}");
	free(reply);
	reply = NULL;
	rc = runtime_control_call(sock, NBC_OP_STATUS, 0, 0, NULL, 10000, &st, &reply, &rlen, err,
				  sizeof(err));
	CHECK(rc == 0 && st == 0);
	CHECK_STR_CONTAINS(reply, "decided by: policy 20, pinned 10");
	free(reply);

	CHECK(ph_comm_finalize(&pc) == 0); /* writes the metrics file */
	char path[300];
	snprintf(path, sizeof(path), "%s/m.prom", dir);
	char *m = slurp(path);
	CHECK(m != NULL);
	if (m) {
		char err2[256] = "";
		CHECK(prom_parse(m, err2, sizeof(err2)) == 0);
		if (err2[0])
			fprintf(stderr, "metrics: %s\n", err2);
		char pf[120], ps[120];
		snprintf(pf, sizeof(pf), "policy=%s", first);
		snprintf(ps, sizeof(ps), "policy=%s", second);
		const char *big[] = {"comm=0xabc", "size_band=4MiB", "source=policy", pf, NULL};
		const char *mid[] = {"comm=0xabc", "size_band=256KiB", "source=policy", ps, NULL};
		const char *small[] = {"comm=0xabc", "size_band=16KiB", "source=pinned", "policy=",
				       NULL};
		CHECK(prom(m, "ncclbpf_collectives_total", big) == 10);
		CHECK(prom(m, "ncclbpf_collectives_total", mid) == 10);
		CHECK(prom(m, "ncclbpf_collectives_total", small) == 10);
		CHECK(prom(m, "ncclbpf_collective_latency_seconds_count", big) == 10);
		CHECK(prom(m, "ncclbpf_collective_busbw_bytes_per_second_count", big) == 10);
		/* 4 MiB x 2(n-1)/n = 6 MiB in 20 us: 3.1e11 B/s, in the (3e11, 4e11] bucket */
		const char *bw3[] = {"comm=0xabc", "size_band=4MiB", "le=3e+11", NULL};
		const char *bw4[] = {"comm=0xabc", "size_band=4MiB", "le=4e+11", NULL};
		CHECK(prom(m, "ncclbpf_collective_busbw_bytes_per_second_bucket", bw3) == 0);
		CHECK(prom(m, "ncclbpf_collective_busbw_bytes_per_second_bucket", bw4) == 10);
		double bwsum = prom(m, "ncclbpf_collective_busbw_bytes_per_second_sum", big);
		CHECK(fabs(bwsum - 10 * 6.0 * (1 << 20) / 20e-6) / bwsum < 1e-3);
		const char *dp[] = {"comm=0xabc", "source=policy", NULL};
		const char *dk[] = {"comm=0xabc", "source=pinned", NULL};
		CHECK(prom(m, "ncclbpf_tuner_decisions_by_source_total", dp) == 20);
		CHECK(prom(m, "ncclbpf_tuner_decisions_by_source_total", dk) == 10);
		CHECK(prom(m, "ncclbpf_decision_provenance_misses_total", (const char *[]){NULL}) ==
		      0);
		if (system("command -v promtool >/dev/null 2>&1") == 0) {
			char cmd[400];
			snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' >/dev/null", path);
			CHECK(system(cmd) == 0);
		}
		free(m);
	}
	tuner_comm_close(t); /* flushes the decision log */

	/* the timeline: coll_done carries the source and the program */
	trace_writer_flush_all();
	char *tr = slurp(trace_writer_path());
	CHECK(tr != NULL);
	char qf[140], qs[140];
	snprintf(qf, sizeof(qf), "\"src\":\"policy\",\"policy\":\"%s\"", first);
	snprintf(qs, sizeof(qs), "\"src\":\"policy\",\"policy\":\"%s\"", second);
	CHECK(count_lines(tr, (const char *[]){"coll_done", "\"comm\":\"0xabc\"", qf, NULL}) == 10);
	CHECK(count_lines(tr, (const char *[]){"coll_done", "\"comm\":\"0xabc\"", qs, NULL}) == 10);
	CHECK(count_lines(tr, (const char *[]){"coll_done", "\"comm\":\"0xabc\"",
					       "\"src\":\"pinned\",\"policy\":\"\"", NULL}) == 10);
	free(tr);
	/* ... and `ncclbpf trace` puts them in the Perfetto args */
	char tdir[200], tout[200];
	snprintf(tdir, sizeof(tdir), "%s/trace", dir);
	snprintf(tout, sizeof(tout), "%s/trace.json", dir);
	char *targv[] = {"trace", tdir, "-o", tout, NULL};
	CHECK(cmd_trace(4, targv) == 0);
	char *tj = slurp(tout);
	char af[140];
	snprintf(af, sizeof(af), "\"decided_by\":\"policy\",\"policy\":\"%s\"", first);
	CHECK_STR_CONTAINS(tj, af);
	CHECK_STR_CONTAINS(tj, "\"decided_by\":\"pinned\"");
	free(tj);

	/* the decision log */
	char ldir[200];
	snprintf(ldir, sizeof(ldir), "%s/log", dir);
	DIR *d = opendir(ldir);
	char *log = NULL;
	for (struct dirent *de; d && (de = readdir(d));)
		if (strstr(de->d_name, "decisions-")) {
			char p[500];
			snprintf(p, sizeof(p), "%s/%s", ldir, de->d_name);
			log = slurp(p);
		}
	if (d)
		closedir(d);
	CHECK(log != NULL);
	snprintf(qf, sizeof(qf), "\"src\":\"policy\",\"policy\":\"%s\"}", first);
	snprintf(qs, sizeof(qs), "\"src\":\"policy\",\"policy\":\"%s\"}", second);
	CHECK(count_lines(log, (const char *[]){"\"comm\":\"0xabc\"", qf, NULL}) == 10);
	CHECK(count_lines(log, (const char *[]){"\"comm\":\"0xabc\"", qs, NULL}) == 10);
	CHECK(count_lines(log, (const char *[]){"\"comm\":\"0xabc\"", "\"src\":\"pinned\"}",
						NULL}) == 10);
	free(log);
	char *dargv[] = {"decisions", "-q", ldir, NULL};
	CHECK(cmd_decisions(3, dargv) == 0);
}

/* NCCL_ALGO restricts the table: a choice nobody overrides is the environment's. */
static void test_env(void)
{
	char first[96], second[96];
	setenv("NCCL_ALGO", "Ring", 1);
	runtime_unload_policies();
	void *t = NULL;
	tuner_comm_open(6, 0xe1, 4, 1, NULL, &t);
	for (int i = 0; i < 6 && t; i++)
		collective(t, NULL, sizes[i % 3]);
	uint64_t src[NB_DSRC_COUNT];
	if (t) {
		sources_of(t, src);
		CHECK_EQ_U64(src[NB_DSRC_ENV], 6);
		tuner_comm_close(t);
	}
	load_split(first, second, sizeof(first));
	tuner_comm_open(6, 0xe2, 4, 1, NULL, &t);
	for (int i = 0; i < 6 && t; i++)
		collective(t, NULL, sizes[i % 3]);
	if (t) {
		sources_of(t, src);
		CHECK_EQ_U64(src[NB_DSRC_ENV], 2);    /* kept: 16 KiB */
		CHECK_EQ_U64(src[NB_DSRC_POLICY], 4); /* within the restriction */
		tuner_comm_close(t);
	}
	unsetenv("NCCL_ALGO");
	/* no policy, no restriction: NCCL's own */
	runtime_unload_policies();
	tuner_comm_open(6, 0xe3, 4, 1, NULL, &t);
	for (int i = 0; i < 3 && t; i++)
		collective(t, NULL, sizes[i % 3]);
	if (t) {
		sources_of(t, src);
		CHECK_EQ_U64(src[NB_DSRC_NCCL], 3);
		tuner_comm_close(t);
	}
}

/* A native inner tuner that changes NCCL's choice decided (the fake one always does). */
static void test_inner(const char *fake)
{
	setenv("NCCLBPF_TUNER_INNER", fake, 1);
	chain_reset_for_tests();
	void *t = NULL;
	tuner_comm_open(6, 0x1a, 4, 1, NULL, &t);
	if (t) {
		tuner_comm_chain_init(t, 4, 1, NULL, NULL, NULL);
		CHECK(((struct tuner_comm *)t)->inner != NULL);
		for (int i = 0; i < 4; i++)
			collective(t, NULL, sizes[0]);
		uint64_t src[NB_DSRC_COUNT];
		sources_of(t, src);
		CHECK_EQ_U64(src[NB_DSRC_INNER], 4);
		tuner_comm_close(t);
	}
	unsetenv("NCCLBPF_TUNER_INNER");
	chain_reset_for_tests();
}

/* Collectives the tuner never decided: "unknown", and a miss when the communicator has a
 * tuner (the join failed), none when it has not. */
static void test_unknown(void)
{
	struct prov_counters before, after;
	prov_get_counters(&before);
	void *t = NULL;
	tuner_comm_open(6, 0xf00, 4, 1, NULL, &t);
	struct ph_host h;
	ph_open_table(&h, 7, prof_table(7));
	struct ph_comm pc, lone;
	CHECK(ph_comm_init(&h, &pc, 0xf00, "no-decisions", 1, 4, 0) == 0);
	CHECK(ph_comm_init(&h, &lone, 0xf01, "no-tuner", 1, 4, 0) == 0);
	for (int i = 0; i < 5; i++) {
		collective(NULL, &pc, sizes[0]);
		collective(NULL, &lone, sizes[0]);
	}
	prov_get_counters(&after);
	CHECK_EQ_U64(after.misses - before.misses, 5);
	CHECK(ph_comm_finalize(&pc) == 0); /* the file holds both until lone's finalize */
	char path[300];
	snprintf(path, sizeof(path), "%s/m.prom", dir);
	char *m = slurp(path);
	const char *l1[] = {"comm=0xf00", "source=unknown", NULL};
	const char *l2[] = {"comm=0xf01", "source=unknown", NULL};
	CHECK(m != NULL);
	if (m) {
		CHECK(prom(m, "ncclbpf_collectives_total", l1) == 5);
		CHECK(prom(m, "ncclbpf_collectives_total", l2) == 5);
		CHECK(prom(m, "ncclbpf_decision_provenance_misses_total", (const char *[]){NULL}) ==
		      5);
	}
	free(m);
	CHECK(ph_comm_finalize(&lone) == 0);
	if (t)
		tuner_comm_close(t);
}

/* No consumer: decisions take the straight path; status derives their sources. */
static int straight_main(void)
{
	unsetenv("NCCLBPF_METRICS_FILE");
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_DECISION_LOG");
	setenv("NCCLBPF_CONTROL", "off", 1);
	setenv("NCCLBPF_AGREE", "off", 1);
	unsetenv("NCCL_ALGO");
	unsetenv("NCCL_PROTO");
	/* one program: the straight path runs a direct chain */
	char spec[600];
	snprintf(spec, sizeof(spec), "%s:first", obj);
	CHECK(runtime_load_policies(spec) == 1);
	void *t = NULL;
	tuner_comm_open(6, 0x57, 4, 1, NULL, &t);
	CHECK(t != NULL);
	if (!t)
		TEST_DONE();
	for (int i = 0; i < N; i++)
		collective(t, NULL, sizes[i % 3]);
	struct tuner_comm *tc = t;
	if (!tc->straight)
		printf("straight path not taken (no membarrier?): sources counted one by one\n");
	uint64_t general = atomic_load(&tc->stats.general);
	printf("%llu of %d decisions on the general path\n", (unsigned long long)general, N);
	uint64_t src[NB_DSRC_COUNT];
	sources_of(t, src);
	CHECK_EQ_U64(src[NB_DSRC_POLICY], 10);
	CHECK_EQ_U64(src[NB_DSRC_PINNED], 20);
	uint64_t sum = 0;
	for (int i = 0; i < NB_DSRC_COUNT; i++)
		sum += src[i];
	CHECK_EQ_U64(sum, N);
	tuner_comm_close(t);
	TEST_DONE();
}

/* Two communicators of one mock-host job, the policy deciding; the metrics file is written
 * at each finalize (the second carries the first's numbers no more: it is kept open). */
static int job_main(const char *out)
{
	char p[300];
	snprintf(p, sizeof(p), "%s/", out);
	setenv("NCCLBPF_METRICS_FILE", p, 1);
	setenv("NCCLBPF_METRICS_INTERVAL", "0", 1);
	setenv("NCCLBPF_CONTROL", "off", 1);
	setenv("NCCLBPF_AGREE", "off", 1);
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_DECISION_LOG");
	prof_set_mode(NULL); /* the default with a metrics file: coll */
	char first[96], second[96];
	load_split(first, second, sizeof(first));
	void *t = NULL;
	tuner_comm_open(6, 0x70b, 4, 1, NULL, &t);
	struct ph_host h;
	ph_open_table(&h, 7, prof_table(7));
	struct ph_comm pc;
	CHECK(ph_comm_init(&h, &pc, 0x70b, "promjob", 1, 4, 0) == 0);
	for (int i = 0; i < 3 * 50; i++)
		collective(t, &pc, sizes[i % 3]);
	CHECK(ph_comm_finalize(&pc) == 0); /* the file, with the final numbers */
	if (t)
		tuner_comm_close(t);
	printf("policy %s, %s\n", first, second);
	TEST_DONE();
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s PROV_SPLIT.bpf.o FAKE_TUNER.so|--straight\n", argv[0]);
		return 2;
	}
	obj = argv[1];
	unsetenv("NCCLBPF_POLICY");
	unsetenv("NCCLBPF_TUNER_INNER");
	if (!strcmp(argv[2], "--straight"))
		return straight_main();
	if (!strcmp(argv[2], "--job") && argc > 3)
		return job_main(argv[3]);
	snprintf(dir, sizeof(dir), "/tmp/nb_prov.XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	char p[300];
	snprintf(p, sizeof(p), "%s/m.prom", dir);
	setenv("NCCLBPF_METRICS_FILE", p, 1);
	setenv("NCCLBPF_METRICS_INTERVAL", "0", 1);
	snprintf(p, sizeof(p), "%s/trace", dir);
	setenv("NCCLBPF_TRACE", p, 1);
	snprintf(p, sizeof(p), "%s/log", dir);
	mkdir(p, 0700);
	setenv("NCCLBPF_DECISION_LOG", p, 1);
	snprintf(p, sizeof(p), "%s/ctl", dir);
	setenv("NCCLBPF_CONTROL_DIR", p, 1);
	setenv("NCCLBPF_CONTROL", "on", 1);
	setenv("NCCLBPF_AGREE", "off", 1);
	unsetenv("NCCL_ALGO");
	unsetenv("NCCL_PROTO");
	prof_set_mode("coll");
	test_policy();
	test_env();
	test_inner(argv[2]);
	test_unknown();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (!test_failures && system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	TEST_DONE();
}

/* NCCLBPF_METRICS_FILE (issue 15): the file written at finalize and every interval parses
 * with a strict Prometheus text-format parser (and `promtool check metrics` when installed),
 * carries exact counts, latency sums, histogram buckets and bus bandwidth per communicator /
 * collective / size band / algorithm / protocol, tuner decisions, faults and drops, escapes
 * a hostile communicator name, is replaced atomically (no temp file left), and a path that
 * cannot be written is logged and counted without failing anything. The parser itself is
 * checked to reject broken texts. */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/metrics/metrics.h"
#include "plugin/tuner/tuner.h"
#include "prof_test_util.h"
#include "prom_parse.h"
#include "test_util.h"

static char dir[256];

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 22);
	size_t n = buf ? fread(buf, 1, (1 << 22) - 1, f) : 0;
	fclose(f);
	if (buf)
		buf[n] = 0;
	return buf;
}

static double get(const char *text, const char *name, const char *const *labels)
{
	double v = NAN;
	if (prom_find(text, name, labels, &v) != 0) {
		fprintf(stderr, "no unique sample %s", name);
		for (int i = 0; labels && labels[i]; i++)
			fprintf(stderr, " %s", labels[i]);
		fprintf(stderr, "\n");
		return NAN;
	}
	return v;
}

static void check_parses(const char *text, const char *what)
{
	char err[256] = "";
	int rc = prom_parse(text, err, sizeof(err));
	if (rc)
		fprintf(stderr, "%s: %s\n", what, err);
	CHECK(rc == 0);
}

static void test_parser_rejects(void)
{
	char err[256];
	static const char *const bad[] = {
		"x_total 1\n",                                   /* no TYPE */
		"# TYPE x_total counter\nx_total 1",             /* no final newline */
		"# TYPE x_total counter\nx_total{a=\"1\"} 1\nx_total{a=\"1\"} 2\n", /* duplicate */
		"# TYPE x_total counter\nx_total -1\n",          /* negative counter */
		"# TYPE x counter\nx 1\n",                       /* counter without _total */
		"# TYPE x_total counter\nx_total{a=\"\\t\"} 1\n", /* bad escape */
		"# TYPE x_total counter\nx_total{__a=\"1\"} 1\n", /* reserved label */
		"# TYPE x gauge\n# TYPE y gauge\nx 1\ny 1\nx{a=\"b\"} 2\n", /* not contiguous */
		"# TYPE x gauge\nx 1\n# HELP x late\n",          /* HELP after samples */
		"# TYPE x gauge\nx 0x10\n",                      /* hex value */
		"# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"2\"} 1\n"
		"h_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\n", /* not cumulative */
		"# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n", /* no +Inf */
		"# TYPE h histogram\nh_bucket{le=\"+Inf\"} 3\nh_sum 1\nh_count 2\n", /* count */
		"# TYPE h histogram\nh_bucket{le=\"2\"} 1\nh_bucket{le=\"1\"} 1\n"
		"h_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n", /* le decreasing */
		"# TYPE x gauge\nx  1\n",                        /* two spaces */
		"# TYPE x wobble\nx 1\n",                        /* unknown type */
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = prom_parse(bad[i], err, sizeof(err));
		if (rc == 0)
			fprintf(stderr, "parser accepted bad text %zu\n", i);
		CHECK(rc != 0);
	}
	check_parses("# HELP h a histogram\n# TYPE h histogram\nh_bucket{le=\"1e-06\"} 0\n"
		     "h_bucket{le=\"+Inf\"} 2\nh_sum 0.5\nh_count 2\n# TYPE g gauge\n"
		     "g{a=\"q\\\"\\\\\\n\"} NaN 1700000000\n",
		     "good text");
}

static void run_colls(struct ph_comm *c, int n, uint64_t count, int algo, int proto, bool sym,
		      uint64_t gpu_ns)
{
	for (int i = 0; i < n; i++) {
		struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLREDUCE, .count = count,
				    .algo = algo, .proto = proto, .n_channels = 2, .gpu_ns = gpu_ns,
				    .sym = sym};
		ph_coll_run(c, &k);
	}
}

static void test_file(void)
{
	char file[300];
	snprintf(file, sizeof(file), "%s/m_%%p.prom", dir);
	setenv("NCCLBPF_METRICS_FILE", file, 1);
	setenv("NCCLBPF_METRICS_INTERVAL", "0", 1);
	metrics_reset_for_tests();
	prof_set_mode("coll"); /* every collective GPU-timed */
	CHECK(metrics_enabled());
	char want_path[300];
	snprintf(want_path, sizeof(want_path), "%s/m_%d.prom", dir, (int)getpid());
	CHECK(strcmp(metrics_path(), want_path) == 0);

	struct ph_host h;
	ph_open_table(&h, 7, prof_table(7));
	struct ph_comm a, b;
	CHECK(ph_comm_init(&h, &a, 0xa11ce, "train \"dp\" \\ group\nx", 1, 8, 3) == 0);
	CHECK(ph_comm_init(&h, &b, 0xb0b, "", 1, 8, 3) == 0);
	run_colls(&a, 30, 1024, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL, false, 7000);  /* 4 KiB */
	run_colls(&a, 5, 1 << 20, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, false, 400000);
	run_colls(&a, 4, 64, 0, 0, true, 3000); /* symmetric kernel, 256 B */
	run_colls(&b, 7, 1024, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL, false, 9000);
	/* the application's per-call tags (issue 25): 20 distinct ones, 2 collectives each;
	 * the first 16 get their own series, the other 4 land in tag="other" */
	for (uint64_t tg = 1; tg <= 20; tg++)
		for (int i = 0; i < 2; i++) {
			struct ph_coll k = {.coll_type = NCCLBPF_COLL_ALLGATHER, .count = 256,
					    .algo = NCCLBPF_ALGO_TREE, .proto = NCCLBPF_PROTO_SIMPLE,
					    .n_channels = 2, .gpu_ns = 5000, .user_tag = 1000 + tg};
			ph_coll_run(&a, &k);
		}

	/* tuner decisions of one communicator (no policy: none changed) */
	void *tctx = NULL;
	tuner_comm_open(6, 0xa11ce, 8, 1, NULL, &tctx);
	float table[7][3];
	for (int i = 0; i < 21; i++)
		table[i / 3][i % 3] = 10.0f + (float)i;
	int nch = 0;
	for (int i = 0; i < 11; i++)
		tuner_get_coll_info(tctx, 4, 4096, 1, (float **)table, 7, 3, 0, &nch);
	tuner_comm_close(tctx);

	CHECK(ph_comm_finalize(&b) == 0); /* written now, with b's final numbers */
	char *t = slurp(want_path);
	CHECK(t != NULL);
	if (!t)
		return;
	check_parses(t, "after finalize of b");
	static const char *const b_tree[] = {"comm=0xb0b", "coll=AllReduce", "size_band=4KiB",
					     "algo=Tree", "proto=LL", "rank=3", NULL};
	CHECK(get(t, "ncclbpf_collectives_total", b_tree) == 7);
	free(t);
	CHECK(ph_comm_finalize(&a) == 0);
	t = slurp(want_path);
	CHECK(t != NULL);
	if (!t)
		return;
	check_parses(t, "after finalize of a");
	static const char *const ring_ll[] = {"comm=0xa11ce", "coll=AllReduce", "size_band=4KiB",
					      "algo=Ring", "proto=LL", NULL};
	CHECK(get(t, "ncclbpf_collectives_total", ring_ll) == 30);
	CHECK(get(t, "ncclbpf_collective_latency_seconds_count", ring_ll) == 30);
	CHECK(fabs(get(t, "ncclbpf_collective_latency_seconds_sum", ring_ll) - 30 * 7e-6) < 1e-9);
	/* 7 us lies in (5 us, 10 us]: 0 at le=5e-06, 30 from le=1e-05 on */
	static const char *const le5[] = {"comm=0xa11ce", "size_band=4KiB", "algo=Ring",
					  "le=5e-06", NULL};
	static const char *const le10[] = {"comm=0xa11ce", "size_band=4KiB", "algo=Ring",
					   "le=1e-05", NULL};
	CHECK(get(t, "ncclbpf_collective_latency_seconds_bucket", le5) == 0);
	CHECK(get(t, "ncclbpf_collective_latency_seconds_bucket", le10) == 30);
	/* busbw: 4096 B x 2(n-1)/n over 7 us */
	double bw = get(t, "ncclbpf_collective_bus_bandwidth_bytes_per_second", ring_ll);
	CHECK(fabs(bw - 4096.0 * 2 * 7 / 8 / 7e-6) / bw < 1e-4);
	static const char *const ring_simple[] = {"comm=0xa11ce", "size_band=4MiB",
						  "algo=Ring", "proto=Simple", NULL};
	CHECK(get(t, "ncclbpf_collectives_total", ring_simple) == 5);
	static const char *const sym[] = {"comm=0xa11ce", "size_band=256B", "algo=Symmetric",
					  "proto=none", NULL};
	CHECK(get(t, "ncclbpf_collectives_total", sym) == 4);
	static const char *const name[] = {"comm=0xa11ce", "comm_name=train \"dp\" \\ group\nx",
					   "algo=Ring", "proto=LL", NULL};
	CHECK(get(t, "ncclbpf_collectives_total", name) == 30); /* escaped, and back */
	static const char *const tag1[] = {"comm=0xa11ce", "tag=1001", NULL};
	static const char *const tag16[] = {"comm=0xa11ce", "tag=1016", NULL};
	static const char *const tag17[] = {"comm=0xa11ce", "tag=1017", NULL};
	static const char *const tag_other[] = {"comm=0xa11ce", "tag=other", NULL};
	CHECK(get(t, "ncclbpf_tagged_collectives_total", tag1) == 2);
	CHECK(get(t, "ncclbpf_tagged_collectives_total", tag16) == 2);
	CHECK(isnan(get(t, "ncclbpf_tagged_collectives_total", tag17))); /* absent */
	CHECK(get(t, "ncclbpf_tagged_collectives_total", tag_other) == 8);
	CHECK(get(t, "ncclbpf_tagged_collective_latency_seconds_count", tag1) == 2);
	CHECK(fabs(get(t, "ncclbpf_tagged_collective_latency_seconds_sum", tag1) - 2 * 5e-6) <
	      1e-12);
	static const char *const tcomm[] = {"comm=0xa11ce", NULL};
	CHECK(get(t, "ncclbpf_tuner_decisions_total", tcomm) == 11);
	CHECK(get(t, "ncclbpf_tuner_decisions_changed_total", tcomm) == 0);
	static const char *const pool[] = {"reason=pool_exhausted", NULL};
	CHECK(get(t, "ncclbpf_profiler_events_dropped_total", pool) >= 0);
	static const char *const tf[] = {"hook=tuner", NULL};
	CHECK(get(t, "ncclbpf_policy_faults_total", tf) >= 0);
	static const char *const ok[] = {"result=ok", NULL};
	CHECK(get(t, "ncclbpf_metrics_writes_total", ok) >= 1);
	/* promtool, when the system has it */
	if (system("command -v promtool >/dev/null 2>&1") == 0) {
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s' >/dev/null", want_path);
		CHECK(system(cmd) == 0);
	} else {
		printf("promtool not installed: strict parser only\n");
	}
	free(t);
	/* atomic replacement: no temp file left behind */
	DIR *d = opendir(dir);
	int tmp = 0;
	for (struct dirent *de; d && (de = readdir(d));)
		tmp += strstr(de->d_name, ".tmp.") != NULL;
	if (d)
		closedir(d);
	CHECK(tmp == 0);
	unlink(want_path);
}

static void test_interval(void)
{
	char file[300];
	snprintf(file, sizeof(file), "%s/", dir); /* a directory: ncclbpf_<pid>.prom in it */
	setenv("NCCLBPF_METRICS_FILE", file, 1);
	setenv("NCCLBPF_METRICS_INTERVAL", "1", 1);
	metrics_reset_for_tests();
	prof_set_mode("coll");
	char want[300];
	snprintf(want, sizeof(want), "%s/ncclbpf_%d.prom", dir, (int)getpid());
	CHECK(strcmp(metrics_path(), want) == 0);
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0x1e7, "iv", 1, 2, 0) == 0);
	run_colls(&c, 3, 256, 1, 0, false, 5000);
	/* the writer thread writes within the interval without any finalize */
	struct stat st;
	int waited = 0;
	while (stat(want, &st) != 0 && waited < 40) {
		struct timespec ts = {0, 100000000};
		nanosleep(&ts, NULL);
		waited++;
	}
	CHECK(stat(want, &st) == 0);
	char *t = slurp(want);
	if (t) {
		check_parses(t, "interval write");
		static const char *const l[] = {"comm=0x1e7", "size_band=1KiB", NULL};
		CHECK(get(t, "ncclbpf_collectives_total", l) == 3);
		free(t);
	}
	CHECK(ph_comm_finalize(&c) == 0);
	unlink(want);
	metrics_reset_for_tests();
}

static void test_bad_path(void)
{
	setenv("NCCLBPF_METRICS_FILE", "/nonexistent-dir/x/m.prom", 1);
	setenv("NCCLBPF_METRICS_INTERVAL", "0", 1);
	metrics_reset_for_tests();
	prof_set_mode("coll");
	struct ph_host h;
	ph_open_table(&h, 6, prof_table(6));
	struct ph_comm c;
	CHECK(ph_comm_init(&h, &c, 0xbad, "bad", 1, 2, 0) == 0);
	run_colls(&c, 2, 256, 1, 0, false, 5000);
	CHECK(ph_comm_finalize(&c) == 0); /* the write fails: logged, counted, nothing else */
	char err[256];
	CHECK(metrics_write_now(err, sizeof(err)) < 0);
	CHECK(strstr(err, "/nonexistent-dir") != NULL);
	char *buf = malloc(1 << 20);
	CHECK(buf && metrics_render(buf, 1 << 20) > 0);
	static const char *const e[] = {"result=error", NULL};
	if (buf)
		CHECK(get(buf, "ncclbpf_metrics_writes_total", e) >= 2);
	free(buf);
	unsetenv("NCCLBPF_METRICS_FILE");
	metrics_reset_for_tests();
}

int main(void)
{
	unsetenv("NCCLBPF_TRACE");
	unsetenv("NCCLBPF_POLICY");
	snprintf(dir, sizeof(dir), "/tmp/ncclbpf_metrics_%d", (int)getpid());
	mkdir(dir, 0755);
	test_parser_rejects();
	test_file();
	test_interval();
	test_bad_path();
	rmdir(dir);
	TEST_DONE();
}

/* Asking a policy what it decides (issue 26): `ncclbpf run` through the real plugin path,
 * `rules show` / `config` reading rule tables back, `rules compile --regbuff` on NVIDIA's
 * example file, `tune` on nccl-tests output, `bench` on a policy without a native twin,
 * and the mock host's simulate fixes (shape checks, requests the plugin did not apply).
 * Usage: test_cli_run   (runs ./ncclbpf and ./mock_nccl_host in the build directory) */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_run.h"
#include "profiler/json_mini.h"
#include "test_util.h"

static char *out;
static char dir[64];

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	setenv("CLI_RUN_CMD", cmd, 1);
	free(out);
	return cli_run_alloc("timeout 120 sh -c \"$CLI_RUN_CMD\" 2>&1", &out, NULL);
}

static size_t count_substr(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static bool jis(const struct jm *o, const char *k, const char *want)
{
	const char *v = jm_str(o, k);
	return v && !strcmp(v, want);
}

static void test_run(void)
{
	/* a shipped policy: the table, NCCL's default beside it */
	CHECK(run("./ncclbpf run policies/size_aware.bpf.o --bytes 1K,16M") == 0);
	CHECK_STR_CONTAINS(out, "bound as ncclTunerPlugin_v6; 8 ranks on 1 node");
	CHECK_STR_CONTAINS(out, "attached policies/size_aware.bpf.o:size_aware to hook tuner");
	CHECK_STR_CONTAINS(out, "AllReduce\n");
	CHECK_STR_CONTAINS(out, "size (B)  algo  proto   channels  source  NCCL default");
	CHECK_STR_CONTAINS(out, "         1024  Tree  Simple         2  policy  Tree/LL/32");
	CHECK_STR_CONTAINS(out, "     16777216  Ring  Simple         8  policy  NVLS/Simple/32");
	/* a request NCCL cannot run: NCCL's choice stays, and the reason is shown */
	CHECK(run("./ncclbpf run tests/progs/cli_run_nvls.bpf.o --coll broadcast,all_reduce "
		  "--bytes 64K") == 0);
	CHECK_STR_CONTAINS(out, "NVLS  Simple         4  policy");
	CHECK_STR_CONTAINS(out, "NCCL (not applied)");
	CHECK_STR_CONTAINS(out, "(algorithm/protocol marked unavailable by NCCL)");
	CHECK(strstr(out, "AllReduce") && strstr(out, "AllReduce") < strstr(out, "Broadcast"));
	CHECK(run("./ncclbpf run tests/progs/cli_run_nvls.bpf.o --ranks 16 --nodes 2 --bytes 64K") == 0);
	CHECK_STR_CONTAINS(out, "16 ranks on 2 nodes");
	CHECK_STR_CONTAINS(out, "multi-node");
	CHECK_STR_CONTAINS(out, "NCCL (not applied)");
	/* --json: one document, a row per (collective, size) */
	CHECK(run("./ncclbpf run --json tests/progs/cli_run_nvls.bpf.o --coll all --bytes 1K-16K "
		  "--nccl 2.29 2>/dev/null") == 0);
	char err[256] = "";
	struct jm *j = jm_parse(out, err, sizeof(err));
	CHECK(j != NULL);
	CHECK(jis(j, "schema", "ncclbpf.run/1") && jis(j, "nccl", "2.29") && jis(j, "topo", "nvlink-node"));
	CHECK(jm_num(j, "tuner_abi") == 5 && jm_num(j, "ranks") == 8 && jm_num(j, "nodes") == 1);
	CHECK(jm_elem(j, "attached", 0) && jm_elem(j, "objects", 0));
	CHECK(jm_elem(j, "results", 24) && !jm_elem(j, "results", 25)); /* 5 collectives x 5 sizes */
	const struct jm *r0 = jm_elem(j, "results", 0), *r24 = jm_elem(j, "results", 24);
	CHECK(jis(r0, "coll", "AllReduce") && jm_num(r0, "bytes") == 1024 && jis(r0, "algo", "NVLS") &&
	      jis(r0, "source", "policy") && jm_num(r0, "channels") == 4);
	CHECK(r0 && jm_get(r0, "issue") && jm_get(r0, "issue")->type == JM_NULL);
	const struct jm *d0 = r0 ? jm_get(r0, "default") : NULL;
	CHECK(jis(d0, "algo", "Tree") && jm_num(d0, "channels") == 32);
	CHECK(jis(r24, "coll", "Broadcast") && jm_num(r24, "bytes") == 16384 && jis(r24, "source", "nccl"));
	CHECK(jm_str(r24, "issue") && strstr(jm_str(r24, "issue"), "unavailable"));
	jm_free(j);
	/* sizes: a range doubles, :F multiplies */
	CHECK(run("./ncclbpf run policies/noop.bpf.o --bytes 1K-1M:4 | grep -c 'NCCL  '") == 0);
	CHECK(atoi(out) == 6);
	CHECK(run("./ncclbpf run policies/noop.bpf.o --bytes=8-64 | grep -c 'NCCL  '") == 0);
	CHECK(atoi(out) == 4);
	/* 2.31 selection (ties to the highest index, nChannels a cap) */
	CHECK(run("./ncclbpf run policies/size_aware.bpf.o --nccl 2.31 --bytes 1K") == 0);
	CHECK_STR_CONTAINS(out, "NCCL 2.31");
	/* refused: exit 1 with one clear reason */
	CHECK(run("./ncclbpf run policies/unsafe/map_value_oob.bpf.o") == 1);
	CHECK_STR_CONTAINS(out, "[E-MAP-VALUE-OOB]");
	CHECK_STR_CONTAINS(out, "ncclbpf run: no tuner program of policies/unsafe/map_value_oob.bpf.o "
				"was attached");
	CHECK(strstr(out, "size (B)") == NULL);
	CHECK(run("./ncclbpf run policies/net_accounting.bpf.o") == 1);
	CHECK_STR_CONTAINS(out, "no program in a SEC(\"tuner\") section");
	CHECK(run("./ncclbpf run nosuch.bpf.o") == 1);
	CHECK_STR_CONTAINS(out, "nosuch.bpf.o: error: No such file");
	CHECK(run("./ncclbpf run --lib /nonexistent/lib.so policies/noop.bpf.o") == 1);
	CHECK_STR_CONTAINS(out, "could not load a tuner from /nonexistent/lib.so");
	/* usage */
	CHECK(run("./ncclbpf run") == 2);
	CHECK(run("./ncclbpf run policies/noop.bpf.o --bytes 1X") == 2);
	CHECK(run("./ncclbpf run policies/noop.bpf.o --bytes 1M-1K") == 2);
	CHECK(run("./ncclbpf run policies/noop.bpf.o --bytes 1K-1M:1") == 2);
	CHECK(run("./ncclbpf run policies/noop.bpf.o --coll alltoall") == 2);
	CHECK_STR_CONTAINS(out, "--coll 'alltoall'");
	CHECK(run("./ncclbpf run policies/noop.bpf.o --nccl 9.9") == 2);
	CHECK(run("./ncclbpf run policies/noop.bpf.o --topo single-rank") == 2);
	CHECK_STR_CONTAINS(out, "single-rank is one rank");
	CHECK(run("./ncclbpf run policies/noop.bpf.o --ranks 2 --nodes 3") == 2);
	CHECK(run("./ncclbpf run policies/noop.bpf.o --topo multi-node") == 2);
	CHECK(run("./ncclbpf run policies/noop.bpf.o,policies/size_aware.bpf.o") == 2);
	CHECK(run("./ncclbpf run policies/noop.bpf.o --ranks 1 --bytes 1K") == 0);
	CHECK_STR_CONTAINS(out, "single-rank");
	CHECK_STR_CONTAINS(out, "Ring  Simple");
}

static void test_rules(void)
{
	/* the shape of NVIDIA's example file: a spreadsheet header, regBuff 1 and 0 rows */
	CHECK(run("printf '%%s\\n' "
		  "'collective_type,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks,numPipeOps,regBuff' "
		  "'# single node, small: tree, registered buffers only' "
		  "'allreduce,0,65536,tree,simple,2,1,-1,-1,1' "
		  "'allreduce,65537,1048576,ring,simple,4,4,32,1,0' "
		  "'allreduce,1048577,4294967295,ring,ll128,-1,-1,-1,4,-1' "
		  "'broadcast,0,32768,tree,simple,-1,1,-1' > %s/nv.conf", dir) == 0);
	CHECK(run("./ncclbpf rules compile %s/nv.conf -o %s/nv.o", dir, dir) == 1);
	CHECK_STR_CONTAINS(out, "nv.conf:3: error: regBuff 1: buffer registration is rank-local");
	CHECK_STR_CONTAINS(out, "or migrate with --regbuff ignore|drop");
	CHECK(access("nv.o", F_OK) != 0);
	CHECK(run("./ncclbpf rules compile %s/nv.conf -o %s/nv.o --regbuff ignore", dir, dir) == 0);
	CHECK(count_substr(out, "warning: regBuff") == 2);
	CHECK_STR_CONTAINS(out, "4 rules from");
	CHECK(run("./ncclbpf rules compile %s/nv.conf -o %s/drop.o --regbuff=drop", dir, dir) == 0);
	CHECK_STR_CONTAINS(out, "nv.conf:4: warning: regBuff 0: rule dropped");
	CHECK_STR_CONTAINS(out, "2 rules from");
	CHECK(run("./ncclbpf rules compile %s/nv.conf -o %s/x.o --regbuff maybe", dir, dir) == 2);
	/* show: the table read back, in the syntax compile reads; it compiles to the same bytes */
	CHECK(run("./ncclbpf rules show %s/nv.o", dir) == 0);
	CHECK_STR_CONTAINS(out, "nv.o: 4 rules;");
	CHECK_STR_CONTAINS(out, "\nallreduce,0,65536,tree,simple,2,1,-1,-1\n");
	CHECK_STR_CONTAINS(out, "\nallreduce,1048577,4294967295,ring,ll128,-1,-1,-1,4\n");
	CHECK_STR_CONTAINS(out, "\nbroadcast,0,32768,tree,simple,-1,1,-1,-1\n");
	CHECK(run("./ncclbpf rules show %s/nv.o > %s/back.conf && ./ncclbpf rules compile "
		  "%s/back.conf -o %s/back.o && cmp %s/nv.o %s/back.o", dir, dir, dir, dir, dir, dir) == 0);
	CHECK(run("./ncclbpf rules show --json %s/drop.o", dir) == 0);
	char err[256] = "";
	struct jm *j = jm_parse(out, err, sizeof(err));
	CHECK(jis(j, "schema", "ncclbpf.rules/1"));
	const struct jm *r0 = jm_elem(j, "rules", 0), *r1 = jm_elem(j, "rules", 1);
	CHECK(r0 && r1 && !jm_elem(j, "rules", 2));
	CHECK(jis(r0, "coll", "AllReduce") && jm_num(r0, "min_bytes") == 1048577 &&
	      jis(r0, "algo", "Ring") && jis(r0, "proto", "LL128") && jm_num(r0, "num_pipe_ops") == 4);
	CHECK(jis(r1, "coll", "Broadcast") && jm_num(r1, "channels") == 0 &&
	      jm_get(r1, "max_bytes") && jm_num(r1, "max_bytes") == 32768);
	jm_free(j);
	CHECK(run("./ncclbpf rules show policies/noop.bpf.o") == 1);
	CHECK_STR_CONTAINS(out, "noop.bpf.o: error: not a rule table");
	CHECK(run("./ncclbpf rules show policies/table_rules.bpf.o") == 1);
	CHECK_STR_CONTAINS(out, "not a rule table: no .rodata tuned_magic");
	CHECK(run("./ncclbpf rules show") == 2);
	CHECK(run("./ncclbpf rules show a.o b.o") == 2);
	/* config decodes the table instead of raw words */
	CHECK(run("./ncclbpf config %s/nv.o", dir) == 0);
	CHECK_STR_CONTAINS(out, "tuned_rules decoded (4 in use;");
	CHECK_STR_CONTAINS(out, "  [3] broadcast,0,32768,tree,simple,-1,1,-1,-1");
	/* and `run` asks the compiled table what it decides */
	CHECK(run("./ncclbpf run %s/nv.o --bytes 1K,2M --coll allreduce,broadcast", dir) == 0);
	CHECK_STR_CONTAINS(out, "         1024  Tree  Simple         2  policy");
	CHECK_STR_CONTAINS(out, "      2097152  Ring  LL128");
}

/* nccl-tests tables of a default run and a Ring run, `cycles` repetitions each */
static void write_nccltests(const char *path, const char *algo, double small, double large)
{
	FILE *f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fprintf(f, "# nccl-tests version 2.18.2 nccl-headers=23007 nccl-library=23007\n"
		   "# Collective test starting: all_reduce_perf\n"
		   "# nThread 1 nGpus 1 minBytes 4096 maxBytes 1048576 step: 16(factor) warmup "
		   "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n# Using devices\n");
	for (int r = 0; r < 4; r++)
		fprintf(f, "#  Rank %2d Group  0 Pid %5d on node-%d device  %d [0x07] NVIDIA H100\n", r,
			100 + r, r / 2, r % 2);
	if (algo)
		fprintf(f, "node-0:100:100 [0] NCCL INFO NCCL_ALGO set by environment to %s\n", algo);
	unsigned seed = 7;
	for (int cycle = 0; cycle < 5; cycle++) {
		fprintf(f, "#\n#%62s%35s\n#       size         count      type   redop    root     time"
			   "   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
			   "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
			   "            (us)  (GB/s)  (GB/s)\n", "out-of-place", "in-place");
		for (unsigned long sz = 4096; sz <= 1048576; sz *= 16) {
			double base = sz < 65536 ? small : large, t[2];
			for (int k = 0; k < 2; k++) {
				seed = seed * 1103515245u + 12345u;
				t[k] = base * (0.98 + 0.04 * (double)((seed >> 16) % 1000) / 1000.0);
			}
			fprintf(f, "%12lu  %12lu     float     sum      -1  %7.2f    0.10    0.10      0"
				   "  %7.2f    0.10    0.10      0\n", sz, sz / 4, t[0], t[1]);
		}
	}
	fprintf(f, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.1\n#\n");
	fclose(f);
}

static void test_tune_nccltests(void)
{
	char a[128], b[128];
	snprintf(a, sizeof(a), "%s/default.txt", dir);
	snprintf(b, sizeof(b), "%s/ring.txt", dir);
	write_nccltests(a, NULL, 50, 100);
	write_nccltests(b, "Ring", 60, 70); /* Ring wins from 64 KiB */
	CHECK(run("./ncclbpf tune %s %s -o %s/nt.o", a, b, dir) == 0);
	CHECK_STR_CONTAINS(out, "1 rule -> ");
	CHECK(run("./ncclbpf rules show %s/nt.o", dir) == 0);
	CHECK_STR_CONTAINS(out, "\nallreduce,");
	CHECK_STR_CONTAINS(out, ",ring,-1,-1,2,4,-1\n");
	CHECK(run("./ncclbpf tune --json %s %s 2>/dev/null", a, b) == 0);
	CHECK_STR_CONTAINS(out, "\"nranks\":4,\"nnodes\":2");
	/* a run with wrong results refuses the file */
	CHECK(run("sed 's/      0  /      5  /' %s > %s/bad.txt && ./ncclbpf tune %s %s/bad.txt", a,
		  dir, a, dir) == 1);
	CHECK_STR_CONTAINS(out, "bad.txt:");
	CHECK_STR_CONTAINS(out, "wrong elements reported (5)");
}

static void test_bench_any_policy(void)
{
	/* a policy with no native twin (a path): measured against NCCL's own choice */
	CHECK(run("NCCL_DEBUG=WARN ./ncclbpf bench --json --calls 1000 --rounds 1 --batch 8 "
		  "--policies noop,tests/progs/cli_run_nvls.bpf.o 2>/dev/null") == 0);
	char err[256] = "";
	struct jm *j = jm_parse(out, err, sizeof(err));
	const struct jm *r0 = jm_elem(j, "results", 0), *r1 = jm_elem(j, "results", 1);
	CHECK(jis(r0, "policy", "noop") && jis(r0, "baseline", "native"));
	CHECK(jis(r1, "policy", "cli_run_nvls.bpf.o") && jis(r1, "baseline", "nccl"));
	const struct jm *n1 = r1 ? jm_get(r1, "native") : NULL, *x1 = r1 ? jm_get(r1, "jit") : NULL;
	CHECK(n1 && jm_get(n1, "p50_ns") && jm_get(n1, "p50_ns")->type == JM_NUM);
	CHECK(x1 && jm_get(x1, "overhead_p50_ns") && jm_get(x1, "overhead_p50_ns")->type == JM_NUM);
	jm_free(j);
	CHECK(run("NCCL_DEBUG=WARN ./ncclbpf bench --calls 1000 --rounds 1 --batch 8 "
		  "--policies tests/progs/cli_run_nvls.bpf.o") == 0);
	CHECK_STR_CONTAINS(out, "cli_run_nvls.bpf.o NCCL");
	CHECK_STR_CONTAINS(out, "NCCL = no twin, NCCL's own choice");
	CHECK(run("./ncclbpf bench --calls 1000 --policies /tmp") == 1);
	CHECK_STR_CONTAINS(out, "not a regular file (a directory)");
}

static void test_simulate(void)
{
	const char *env = "LD_LIBRARY_PATH=. env -u NCCL_DEBUG";
	/* the cost table must fit the communicator */
	CHECK(run("./mock_nccl_host simulate --topo single-rank --ranks 16 --nodes 2") == 2);
	CHECK_STR_CONTAINS(out, "single-rank is one rank");
	CHECK(run("./mock_nccl_host simulate --topo multi-node") == 2);
	CHECK(run("./mock_nccl_host simulate --topo nvlink-node --ranks 16 --nodes 2") == 2);
	CHECK(run("%s -u NCCLBPF_POLICY ./mock_nccl_host simulate --ranks 16 --nodes 2", env) == 0);
	CHECK_STR_CONTAINS(out, "multi-node, 16 ranks on 2 node(s)");
	CHECK(run("%s -u NCCLBPF_POLICY ./mock_nccl_host simulate --ranks 1 --nodes 1", env) == 0);
	CHECK_STR_CONTAINS(out, "single-rank");
	/* a request NCCL cannot run is marked with the plugin's reason */
	CHECK(run("%s NCCLBPF_POLICY=tests/progs/cli_run_nvls.bpf.o ./mock_nccl_host simulate", env) == 0);
	CHECK_STR_CONTAINS(out, "Ring/LL            32 (NCCL)  ! algorithm/protocol marked "
				"unavailable by NCCL");
	CHECK_STR_CONTAINS(out, "NVLS/Simple *      4 (policy)\n");
}

int main(void)
{
	snprintf(dir, sizeof(dir), "cli_run_XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_run();
	test_rules();
	test_tune_nccltests();
	test_bench_any_policy();
	test_simulate();
	if (!test_failures)
		run("rm -rf %s", dir);
	free(out);
	TEST_DONE();
}

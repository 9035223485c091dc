/* `ncclbpf rules compile` and `ncclbpf tune` end to end: the objects they write load,
 * verify and decide exactly like the rules; bad input writes nothing. Runs ./ncclbpf in the
 * build directory. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ncclbpf/ncclbpf.h>
#include <ncclbpf/policy.h>

#include "test_util.h"
#include "tools/cli_run.h"
#include "tools/tune_object.h"

static char dir[] = "/tmp/ncclbpf-tune-test.XXXXXX";
static char out[16384];

static void write_text(const char *name, const char *text)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	CHECK(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* Runs a shell command in the test directory (where ./ncclbpf links to the built CLI). */
static int run(const char *c)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cd %s && %s", dir, c);
	return cli_run(cmd, out, sizeof(out));
}

struct loaded {
	struct ncclbpf_object *obj;
	struct ncclbpf_program *prog;
};

static int load(const char *name, struct loaded *l)
{
	char p[256], err[1024];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	memset(l, 0, sizeof(*l));
	if (ncclbpf_object_open_file(p, &l->obj, err, sizeof(err)))
		return -1;
	l->prog = ncclbpf_object_find_program(l->obj, "tuned_rules_pick");
	struct ncclbpf_prepare_opts o = {.sz = sizeof(o)};
	return l->prog && !ncclbpf_program_prepare(l->prog, NCCLBPF_HOOK_TUNER, &o, err, sizeof(err)) ? 0 : -1;
}

/* Runs the policy; returns algo * 100 + proto (KEEP = -1 each) and the channels. */
static void decide(struct loaded *l, int coll, uint64_t bytes, int nnodes, int nranks, int pipe_ops,
		   int *algo, int *proto, int *ch)
{
	struct ncclbpf_tuner_ctx ctx;
	memset(&ctx, 0, sizeof(ctx));
	ctx.coll_type = (uint32_t)coll;
	ctx.n_bytes = bytes;
	ctx.n_nodes = (uint32_t)nnodes;
	ctx.n_ranks = (uint32_t)nranks;
	ctx.num_pipe_ops = (uint32_t)pipe_ops;
	ctx.algo = NCCLBPF_ALGO_KEEP;
	ctx.proto = NCCLBPF_PROTO_KEEP;
	uint64_t ret;
	char err[256];
	CHECK(ncclbpf_program_run(l->prog, &ctx, sizeof(ctx), &ret, err, sizeof(err)) == 0);
	*algo = ctx.algo;
	*proto = ctx.proto;
	*ch = ctx.n_channels;
}

static void test_rules_compile(void)
{
	write_text("nccl_tuner.conf",
		   "# migrated from NCCL's example tuner\n"
		   "allreduce,0,65536,tree,ll,-1,2,-1\n"
		   "allreduce,0,1048576,tree,simple,8,-1,-1\n"
		   "allgather,1024,-1,ring,ll128,-1,-1,16,2\n");
	CHECK(run("./ncclbpf rules compile nccl_tuner.conf -o rules.bpf.o 2>&1") == 0);
	CHECK_STR_CONTAINS(out, "3 rules");
	struct loaded l;
	CHECK(load("rules.bpf.o", &l) == 0);
	if (l.prog) {
		int a, p, c;
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 4096, 2, 8, 1, &a, &p, &c); /* rule 1 */
		CHECK(a == NCCLBPF_ALGO_TREE && p == NCCLBPF_PROTO_LL && c == 0);
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 4096, 4, 8, 1, &a, &p, &c); /* rule 2: nodes differ */
		CHECK(a == NCCLBPF_ALGO_TREE && p == NCCLBPF_PROTO_SIMPLE && c == 8);
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 65537, 2, 8, 1, &a, &p, &c); /* rule 2 */
		CHECK(a == NCCLBPF_ALGO_TREE && p == NCCLBPF_PROTO_SIMPLE);
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 1048577, 2, 8, 1, &a, &p, &c); /* none */
		CHECK(a == NCCLBPF_ALGO_KEEP && p == NCCLBPF_PROTO_KEEP && c == 0);
		decide(&l, NCCLBPF_COLL_ALLGATHER, 1ull << 40, 3, 16, 2, &a, &p, &c); /* rule 3 */
		CHECK(a == NCCLBPF_ALGO_RING && p == NCCLBPF_PROTO_LL128);
		decide(&l, NCCLBPF_COLL_ALLGATHER, 1ull << 40, 3, 16, 1, &a, &p, &c); /* pipe ops differ */
		CHECK(a == NCCLBPF_ALGO_KEEP);
		decide(&l, NCCLBPF_COLL_BROADCAST, 4096, 2, 8, 1, &a, &p, &c);
		CHECK(a == NCCLBPF_ALGO_KEEP);
		ncclbpf_object_close(l.obj);
	}
	/* bad line: error with file:line, the existing output is left alone */
	write_text("bad.conf", "allreduce,0,65536,tree,ll,-1,2,-1\nallreduce,0,65536,tree,ll,-1,2\n");
	write_text("keep.bpf.o", "previous contents");
	CHECK(run("./ncclbpf rules compile bad.conf -o keep.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "bad.conf:2: error: 7 fields");
	CHECK(run("cat keep.bpf.o; ls") == 0);
	CHECK_STR_CONTAINS(out, "previous contents");
	CHECK(strstr(out, ".tmp.") == NULL); /* no temporary file left behind */
	/* unwritable destination: error, no crash */
	CHECK(run("./ncclbpf rules compile nccl_tuner.conf -o /nonexistent/dir/x.bpf.o 2>&1") == 1);
	CHECK(run("./ncclbpf rules compile missing.conf -o x.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "missing.conf: error:");
	CHECK(run("./ncclbpf rules frobnicate 2>&1") == 2);
}

/* Deterministic noise: a small LCG, lognormal-ish via a sum of uniforms. */
static uint64_t lcg = 12345;
static double noise(void)
{
	double s = 0;
	for (int i = 0; i < 4; i++) {
		lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
		s += (double)(lcg >> 11) / 9007199254740992.0;
	}
	return 1.0 + 0.08 * (s - 2.0); /* +-16 % */
}

static void test_tune(void)
{
	/* 2 nodes: Tree/LL 25 % faster at 4-16 KiB, Tree/Simple 20 % at 64 KiB, nothing at
	 * 256 KiB-1 MiB (3 % is below the gate), Ring/Simple 8 % faster at 64 MiB (the 10 %
	 * gate rejects it). 4 nodes: default best everywhere. */
	size_t cap = 4u << 20;
	char *csv = malloc(cap);
	size_t n = (size_t)snprintf(csv, cap, "coll,bytes,algo,proto,channels,nranks,nnodes,time_us,policy,config,rep,iter\n");
	const uint64_t sizes[] = {4096, 16384, 65536, 262144, 1048576, 64ull << 20};
	const char *cfgs[][2] = {{"default", "default"}, {"Tree", "LL"}, {"Tree", "Simple"}, {"Ring", "Simple"}};
	for (int rep = 0; rep < 4; rep++)
		for (int nodes = 2; nodes <= 4; nodes += 2)
			for (int si = 0; si < 6; si++)
				for (int c = 0; c < 4; c++)
					for (int it = 0; it < 25; it++) {
						double m = 100;
						if (nodes == 2) {
							if (si <= 1 && c == 1) m = 75;
							if (si == 2 && c == 2) m = 80;
							if ((si == 3 || si == 4) && c == 2) m = 97;
							if (si == 5 && c == 3) m = 92;
						} else if (c) {
							m = 110;
						}
						n += (size_t)snprintf(csv + n, cap - n, "AllReduce,%llu,%s,%s,0,%d,%d,%.3f,,x,%d,%d\n",
								      (unsigned long long)sizes[si], cfgs[c][0], cfgs[c][1],
								      nodes, nodes, m * noise(), rep, it);
					}
	write_text("samples.csv", csv);
	free(csv);
	CHECK(run("./ncclbpf tune --json samples.csv > tune.json 2>tune.err; echo rc=$?; cat tune.json") == 0);
	CHECK_STR_CONTAINS(out, "rc=0");
	CHECK_STR_CONTAINS(out, "{\"coll\":\"AllReduce\",\"nranks\":2,\"nnodes\":2,\"min_bytes\":4096,\"max_bytes\":32768,"
				"\"measured_min\":4096,\"measured_max\":16384,\"sizes\":2,\"algo\":\"Tree\",\"proto\":\"LL\",\"channels\":0,");
	CHECK_STR_CONTAINS(out, "\"min_bytes\":32769,\"max_bytes\":131072,\"measured_min\":65536,\"measured_max\":65536,"
				"\"sizes\":1,\"algo\":\"Tree\",\"proto\":\"Simple\"");
	CHECK_STR_CONTAINS(out, "\"min_bytes\":131073,\"max_bytes\":67108864,\"measured_min\":262144,"
				"\"measured_max\":67108864,\"sizes\":3,\"algo\":\"default\"");
	CHECK_STR_CONTAINS(out, "\"nranks\":4,\"nnodes\":4,\"min_bytes\":4096,\"max_bytes\":67108864,");
	CHECK_STR_CONTAINS(out, "\"split_half\":true");
	/* even reps only: the same decisions from half the data */
	CHECK(run("./ncclbpf tune --reps even samples.csv -o tuned.bpf.o 2>&1") == 0);
	CHECK_STR_CONTAINS(out, "2 rules -> tuned.bpf.o");
	struct loaded l;
	CHECK(load("tuned.bpf.o", &l) == 0);
	if (l.prog) {
		int a, p, c;
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 4096, 2, 2, 1, &a, &p, &c);
		CHECK(a == NCCLBPF_ALGO_TREE && p == NCCLBPF_PROTO_LL);
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 32768, 2, 2, 1, &a, &p, &c);
		CHECK(a == NCCLBPF_ALGO_TREE && p == NCCLBPF_PROTO_LL);
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 32769, 2, 2, 1, &a, &p, &c);
		CHECK(a == NCCLBPF_ALGO_TREE && p == NCCLBPF_PROTO_SIMPLE);
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 1 << 20, 2, 2, 1, &a, &p, &c);
		CHECK(a == NCCLBPF_ALGO_KEEP && p == NCCLBPF_PROTO_KEEP);
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 4096, 4, 4, 1, &a, &p, &c); /* other node count */
		CHECK(a == NCCLBPF_ALGO_KEEP);
		decide(&l, NCCLBPF_COLL_ALLGATHER, 4096, 2, 2, 1, &a, &p, &c); /* other collective */
		CHECK(a == NCCLBPF_ALGO_KEEP);
		decide(&l, NCCLBPF_COLL_ALLREDUCE, 1024, 2, 2, 1, &a, &p, &c); /* below the measured sizes */
		CHECK(a == NCCLBPF_ALGO_KEEP);
		ncclbpf_object_close(l.obj);
	}
	/* bad row: file:line error, nothing written */
	write_text("bad.csv", "coll,bytes,algo,proto,channels,nranks,nnodes,time_us\n"
			      "AllReduce,4096,Tree,LL,0,2,2,10\nAllReduce,4096,Tree,LL,0,2,2,abc\n");
	CHECK(run("./ncclbpf tune bad.csv -o bad.bpf.o 2>&1; ls") == 0);
	CHECK_STR_CONTAINS(out, "bad.csv:3: error: time_us 'abc'");
	CHECK(strstr(out, "bad.bpf.o") == NULL);
	CHECK(run("./ncclbpf tune --reps sometimes samples.csv 2>&1") == 2);
	CHECK(run("./ncclbpf tune --bogus samples.csv 2>&1") == 2);
	CHECK(run("./ncclbpf tune 2>&1") == 2);
}

/* A damaged template gives an error, never a write out of bounds or a bad object. */
static void test_template_checks(void)
{
	struct tune_rule r = {0, 100, NCCLBPF_COLL_ALLREDUCE, -1, -1, -1, NCCLBPF_ALGO_TREE,
			      NCCLBPF_PROTO_LL, 0, 0};
	void *obj = NULL;
	size_t len = 0;
	char err[512];
	CHECK(tune_object_build(ncclbpf_tuned_rules_template, ncclbpf_tuned_rules_template_len, &r, 1, &obj,
				&len, err, sizeof(err)) == 0);
	free(obj);
	size_t tl = ncclbpf_tuned_rules_template_len;
	unsigned char *t = malloc(tl);
	memcpy(t, ncclbpf_tuned_rules_template, tl);
	t[0] = 0;
	CHECK(tune_object_build(t, tl, &r, 1, &obj, &len, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "template: not a little-endian ELF64");
	CHECK(tune_object_build(ncclbpf_tuned_rules_template, 100, &r, 1, &obj, &len, err, sizeof(err)) == -EINVAL);
	/* every truncation and a sweep of single-byte corruptions: error or a checked object */
	for (size_t cut = 0; cut < tl; cut += 97) {
		obj = NULL;
		int rc = tune_object_build(ncclbpf_tuned_rules_template, cut, &r, 1, &obj, &len, err, sizeof(err));
		CHECK(rc != 0);
		free(obj);
	}
	for (size_t i = 0; i < tl; i += 13) {
		memcpy(t, ncclbpf_tuned_rules_template, tl);
		t[i] ^= 0x5a;
		obj = NULL;
		(void)tune_object_build(t, tl, &r, 1, &obj, &len, err, sizeof(err));
		free(obj);
	}
	struct tune_rule many[TUNE_MAX_RULES + 1];
	memset(many, 0, sizeof(many));
	CHECK(tune_object_build(ncclbpf_tuned_rules_template, tl, many, TUNE_MAX_RULES + 1, &obj, &len, err,
				sizeof(err)) == -E2BIG);
	free(t);
}

/* ncclbpf config: list, change with verification, refuse bad assignments. */
static void test_config(void)
{
	CHECK(run("cp $(dirname $(readlink ncclbpf))/policies/bandit.bpf.o b.bpf.o; "
		  "./ncclbpf config b.bpf.o") == 0);
	CHECK_STR_CONTAINS(out, "cfg_gate_small_pct");
	/* the name column is as wide as the longest name (it used to overflow): the size
	 * column lines up on every row, whatever the longest name is */
	CHECK(run("./ncclbpf config b.bpf.o | awk '/ B  / { p = index($0, \" B  \"); "
		  "if (!w) w = p; else if (p != w) bad = 1 } END { exit bad || !w }'") == 0);
	CHECK(run("./ncclbpf config b.bpf.o | "
		  "grep -Ec '^cfg_arm_algo +32 B  \\[0, 0, 0, 1, 1, 1, 6, 4\\]'") == 0);
	CHECK(run("./ncclbpf config b.bpf.o cfg_gate_small_pct=7 'cfg_arm_proto[7]=1' cfg_large_from=0x100000 "
		  "-o c.bpf.o 2>&1 && ./ncclbpf config c.bpf.o") == 0);
	CHECK_STR_CONTAINS(out, "3 values changed");
	CHECK_STR_CONTAINS(out, "[0, 1, 2, 0, 1, 2, 2, 1]");
	CHECK(run("./ncclbpf config c.bpf.o | grep -Ec '^cfg_gate_small_pct +4 B  7$'") == 0);
	CHECK(run("./ncclbpf config c.bpf.o | grep -Ec '^cfg_large_from +8 B  1048576$'") == 0);
	/* errors write nothing */
	CHECK(run("./ncclbpf config b.bpf.o nope=1 -o d.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "no .rodata variable 'nope'");
	CHECK(run("./ncclbpf config b.bpf.o 'cfg_arm_algo[8]=1' -o d.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "index out of range");
	/* a malformed assignment is a usage error (2); one the object refuses is 1 */
	CHECK(run("./ncclbpf config b.bpf.o cfg_warmup=1x -o d.bpf.o 2>&1") == 2);
	CHECK_STR_CONTAINS(out, "not a 64-bit integer");
	CHECK(run("./ncclbpf config b.bpf.o cfg_warmup=4294967296 -o d.bpf.o 2>&1") == 1);
	CHECK(run("./ncclbpf config b.bpf.o cfg_arm_algo=1 -o d.bpf.o 2>&1") == 1);
	CHECK_STR_CONTAINS(out, "give an index");
	CHECK(run("ls d.bpf.o 2>&1") != 0);
	CHECK(run("./ncclbpf config nccl_tuner.conf 2>&1") == 1);
	CHECK(run("./ncclbpf config b.bpf.o cfg_warmup=2 2>&1") == 2); /* no -o */
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char cwd[512];
	if (!getcwd(cwd, sizeof(cwd)))
		return 1;
	/* the CLI: absolute path of ./ncclbpf in the build directory */
	char link[700];
	snprintf(link, sizeof(link), "%s/ncclbpf", dir);
	char target[600];
	snprintf(target, sizeof(target), "%s/ncclbpf", cwd);
	if (symlink(target, link)) {
		perror("symlink");
		return 1;
	}
	test_rules_compile();
	test_tune();
	test_template_checks();
	test_config();
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cli_run(cmd, out, sizeof(out));
	TEST_DONE();
}

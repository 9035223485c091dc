/* End-to-end tests of the tuner shim: the built libncclbpf.so is loaded through the mock
 * NCCL host exactly as NCCL 2.27..2.30 load it, and every scenario runs in its own forked
 * process (the plugin reads NCCLBPF_POLICY once per process, as in a real job).
 * Expected decisions come from the native C policies (same logic as the .bpf.c files) and
 * an independent oracle of the translation rules (tuner_oracle.c). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "mock_nccl.h"
#include "native_policies.h"
#include "plugin/tuner/tuner.h"
#include "test_util.h"
#include "tuner_oracle.h"

#define LIB NB_BUILD_DIR "/libncclbpf.so"
#define POL(n) NB_BUILD_DIR "/policies/" n ".bpf.o"
#define PROG(n) NB_BUILD_DIR "/tests/tuner/progs/" n ".bpf.o"
#define KiB (1024ull)
#define MiB (1024ull * 1024ull)

static const size_t sizes[] = {
	0,       4,        1000,          4 * KiB - 1,   4 * KiB,  32 * KiB,      32 * KiB + 1,
	64 * KiB, MiB - 1, MiB,           4 * MiB - 1,   4 * MiB,  16 * MiB,      32 * MiB,
	32 * MiB + 1, 48 * MiB, 64 * MiB, 100 * MiB,     192 * MiB, 192 * MiB + 1, 1024 * MiB,
};
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

struct shape {
	enum mock_topo topo;
	int ranks, nodes;
};
static const struct shape shapes[] = {
	{ MOCK_TOPO_NVLINK_NODE, 8, 1 }, { MOCK_TOPO_MULTI_NODE, 16, 2 },
	{ MOCK_TOPO_SINGLE_RANK, 1, 1 }, { MOCK_TOPO_NO_LL128, 8, 1 },
	{ MOCK_TOPO_RING_ONLY, 8, 1 },
};
#define N_SHAPES (sizeof(shapes) / sizeof(shapes[0]))

/* Every release the mock host models; 231 = the 2.31 selection semantics (tuner v6), 232 =
 * the same with tuner v7. */
static const int all_releases[] = { 227, 228, 229, 230, 231, 232 };
#define N_RELEASES (sizeof(all_releases) / sizeof(all_releases[0]))

static int expected_version(int release)
{
	return release >= 232 ? 7 : release >= 230 ? 6 : release >= 228 ? 5 : 4;
}

/* NCCL 2.29/2.30 may use AllGather's channel count unclamped (batched broadcasts): the
 * plugin never applies a policy's there. */
static int unclamped_ag(int release, int coll)
{
	return coll == 2 && (release == 229 || release == 230);
}

static int load(struct mock_nccl *m, int release)
{
	int rc = mock_nccl_load_tuner(m, release, LIB, 0);
	if (rc)
		fprintf(stderr, "load failed: %s\n", m->err);
	return rc;
}

/* One getCollInfo call with NCCL's invariants checked. */
static int call_checked(struct mock_comm *c, int coll, size_t bytes,
			const float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS],
			float after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], int *nch)
{
	char why[200];
	memcpy(after, before, sizeof(float) * MOCK_NUM_ALGOS * MOCK_NUM_PROTOS);
	*nch = 0;
	int rc = mock_comm_get_coll_info(c, coll, bytes, 1, 0, after, nch);
	int inv = mock_check_invariants(c->nccl->release, before, after, *nch, 0, why, sizeof(why));
	if (inv)
		fprintf(stderr, "invariant violated: %s\n", why);
	return rc != 0 || inv != 0 ? -1 : 0;
}

/* Compares one call with the oracle for the request (ra, rp, rn). */
static int call_matches(struct mock_comm *c, const struct shape *s, int coll, size_t bytes,
			int ra, int rp, int rn)
{
	float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	int nch, a = -1, p = -1;
	struct oracle_result want;
	mock_cost_table(before, s->topo, coll, bytes, s->ranks, s->nodes);
	if (call_checked(c, coll, bytes, before, after, &nch))
		return 0;
	oracle_expect(c->nccl->release, coll, before, ra, rp, rn, &want);
	mock_select(c->nccl->release, after, &a, &p);
	if (a != want.algo || p != want.proto || nch != want.n_channels) {
		fprintf(stderr,
			"%s %s %zu B on %s: got %s/%s ch %d, want %s/%s ch %d (request %d/%d/%d)\n",
			mock_coll_name(coll), "", bytes, mock_topo_name(s->topo), mock_algo_name(a),
			mock_proto_name(p), nch, mock_algo_name(want.algo),
			mock_proto_name(want.proto), want.n_channels, ra, rp, rn);
		return 0;
	}
	return 1;
}

static void native_request(native_policy_fn fn, const struct shape *s, int coll, size_t bytes,
			   int *ra, int *rp, int *rn)
{
	struct ncclbpf_tuner_ctx x;
	memset(&x, 0, sizeof(x));
	x.n_bytes = bytes;
	x.coll_type = (uint32_t)coll;
	x.n_ranks = (uint32_t)s->ranks;
	x.n_nodes = (uint32_t)s->nodes;
	x.algo = -1;
	x.proto = -1;
	fn(&x);
	*ra = x.algo;
	*rp = x.proto;
	*rn = x.n_channels;
}

/* Every shape x collective x size, on the given release, against a fixed request or a
 * native policy. Returns the number of mismatches. */
static int sweep(int release, native_policy_fn fn, int ra, int rp, int rn)
{
	struct mock_nccl m;
	int bad = 0;
	if (load(&m, release))
		return 1;
	for (size_t si = 0; si < N_SHAPES; si++) {
		struct mock_comm c;
		if (mock_comm_init(&m, &c, 0x1000 + si, shapes[si].ranks, shapes[si].nodes)) {
			bad++;
			continue;
		}
		for (int coll = 0; coll < 5; coll++) {
			for (size_t zi = 0; zi < N_SIZES; zi++) {
				int a = ra, p = rp, n = rn;
				if (fn)
					native_request(fn, &shapes[si], coll, sizes[zi], &a, &p, &n);
				bad += !call_matches(&c, &shapes[si], coll, sizes[zi], a, p, n);
			}
		}
		bad += mock_comm_finalize(&c) != 0;
	}
	return bad;
}

static int sweep(int release, native_policy_fn fn, int ra, int rp, int rn);
/* The same sweep on every release (every tuner test runs in all modes). */
static int sweep_all(native_policy_fn fn, int ra, int rp, int rn)
{
	int bad = 0;
	for (size_t r = 0; r < N_RELEASES; r++)
		bad += sweep(all_releases[r], fn, ra, rp, rn);
	return bad;
}

/* Runs fn in a child process with NCCLBPF_POLICY = policy (NULL: unset) and extra env. */
static void run_scenario(const char *name, const char *policy, const char *const *env,
			 void (*fn)(void))
{
	int fds[2];
	fflush(stdout);
	fflush(stderr);
	CHECK(pipe(fds) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		test_checks = 0; /* the child reports its own checks only */
		test_failures = 0;
		if (policy)
			setenv("NCCLBPF_POLICY", policy, 1);
		else
			unsetenv("NCCLBPF_POLICY");
		for (int i = 0; env && env[i]; i += 2)
			setenv(env[i], env[i + 1], 1);
		fn();
		printf("  %-40s %4d checks, %d failed\n", name, test_checks, test_failures);
		if (test_failures) {
			fprintf(stderr, "plugin log of %s:\n", name);
			mock_log_dump(stderr);
		}
		fflush(stdout);
		fflush(stderr);
		int counts[2] = { test_checks, test_failures };
		ssize_t w = write(fds[1], counts, sizeof(counts));
		_exit(test_failures || w != (ssize_t)sizeof(counts) ? 1 : 0);
	}
	close(fds[1]);
	/* The child's checks count in this binary's summary line. */
	int counts[2] = { 0, 0 };
	ssize_t n = read(fds[0], counts, sizeof(counts));
	close(fds[0]);
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	int ok = WIFEXITED(st) && WEXITSTATUS(st) == 0 && n == (ssize_t)sizeof(counts);
	if (!ok)
		fprintf(stderr, "scenario %s failed (status 0x%x)\n", name, st);
	else {
		test_checks += counts[0];
		test_failures += counts[1];
	}
	CHECK(ok);
}

/* ---- scenarios ---- */

static void sc_no_policy(void)
{
	oracle_pinned = 0; /* no program: nothing pinned */
	for (size_t r = 0; r < N_RELEASES; r++) {
		struct mock_nccl m;
		CHECK(load(&m, all_releases[r]) == 0);
		CHECK(m.tuner_version == expected_version(all_releases[r]));
		/* Pass-through: no table entry and no channel count changes. */
		CHECK(sweep(all_releases[r], NULL, -1, -1, 0) == 0);
	}
	/* The v3 table (bound by releases before 2.23) works too. */
	struct mock_nccl m;
	CHECK(mock_nccl_load_tuner(&m, 230, LIB, 3) == 0 && m.tuner_version == 3);
	struct mock_comm c;
	CHECK(mock_comm_init(&m, &c, 1, 8, 1) == 0);
	CHECK(call_matches(&c, &shapes[0], 4, MiB, -1, -1, 0));
	CHECK(mock_comm_finalize(&c) == 0);
	/* v6 getChunkSize without a chunk program leaves NCCL's chunk. */
	CHECK(load(&m, 230) == 0);
	CHECK(mock_comm_init(&m, &c, 2, 8, 1) == 0);
	size_t chunk = 131072;
	CHECK(mock_comm_get_chunk_size(&c, 4, MiB, 1, 2, 1, &chunk) == 0 && chunk == 131072);
	CHECK(mock_comm_finalize(&c) == 0);
	/* One INFO line for the process, no WARN. */
	CHECK(mock_log_count("NCCLBPF_POLICY not set") == 1);
	CHECK(mock_log_count_level(2, "") == 0);
}

static void sc_name_resolution(void)
{
	struct mock_nccl m;
	/* NCCL_TUNER_PLUGIN=ncclbpf -> dlopen("ncclbpf") fails -> libnccl-tuner-ncclbpf.so */
	CHECK(mock_nccl_load_tuner(&m, 227, "ncclbpf", 0) == 0);
	CHECK(strcmp(m.opened_as, "libnccl-tuner-ncclbpf.so") == 0 && m.tuner_version == 4);
	CHECK(mock_nccl_load_tuner(&m, 229, "ncclbpf", 0) == 0 && m.tuner_version == 5);
	CHECK(mock_nccl_load_tuner(&m, 230, "libnccl-tuner-ncclbpf.so", 0) == 0);
	CHECK(m.tuner_version == 6);
	CHECK(mock_nccl_load_tuner(&m, 228, "none", 0) == -ECANCELED);
	CHECK(mock_nccl_load_tuner(&m, 227, "none", 0) == -ENOENT);
	CHECK(mock_nccl_load_tuner(&m, 230, "/nonexistent/libx.so", 0) == -ENOENT);
	CHECK(mock_nccl_load_tuner(&m, 230, "libm.so.6", 0) == -ENOSYS);
}

static void sc_bad_path(void)
{
	oracle_pinned = 0;
	CHECK(sweep_all(NULL, -1, -1, 0) == 0);
	CHECK(mock_log_count_level(2, "missing_policy.bpf.o") == 1);
}

static void sc_rejected(void)
{
	oracle_pinned = 0;
	CHECK(sweep_all(NULL, -1, -1, 0) == 0);
	/* Exactly one WARN line, naming the program and carrying the verifier's diagnostic. */
	CHECK(mock_log_count_level(2, "reject_ctx_write") == 1);
	CHECK(mock_log_count_level(2, "n_bytes") + mock_log_count_level(2, "read-only") +
		      mock_log_count_level(2, "not writable") >= 1);
}

static void sc_rejected_then_good(void)
{
	CHECK(sweep_all(native_size_aware, 0, 0, 0) == 0);
	CHECK(mock_log_count_level(2, "reject_ctx_write") == 1);
}

static const char *current_policy;

static void sc_shipped_policy(void)
{
	const struct native_policy *np = native_policy_find(current_policy);
	CHECK(np != NULL);
	if (!np)
		return;
	CHECK(sweep_all(np->fn, 0, 0, 0) == 0);
	CHECK(mock_log_count_level(2, "") == 0);
	CHECK(mock_log_count(current_policy) >= 1); /* attached */

	/* Spot checks stating each policy's intent on an 8-GPU NVLink node (2.30). */
	for (int rel = 230; rel <= 231; rel++) {
	struct mock_nccl m;
	struct mock_comm c;
	CHECK(load(&m, rel) == 0);
	CHECK(mock_comm_init(&m, &c, 0xfeed, 8, 1) == 0);
	float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	int nch, a, p, da, dp;
#define SPOT(coll, bytes, ea, ep, en)                                                       \
	do {                                                                                \
		mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, coll, bytes, 8, 1);          \
		CHECK(call_checked(&c, coll, bytes, before, after, &nch) == 0);             \
		mock_select(230, before, &da, &dp);                                         \
		CHECK(mock_select(rel, after, &a, &p) == 0);                                \
		CHECK(a == ((ea) < 0 ? da : (ea)) && p == ((ep) < 0 ? dp : (ep)) && nch == (en)); \
	} while (0)
	if (!strcmp(current_policy, "size_aware")) {
		SPOT(4, 1 * KiB, 0, 2, 2);     /* AllReduce 1 KiB: Tree/Simple, 2 ch */
		SPOT(4, 16 * KiB, 0, 0, 4);    /* AllReduce 16 KiB: Tree/LL, 4 ch */
		SPOT(4, 64 * KiB, 1, 0, 4);    /* AllReduce 64 KiB: Ring/LL, 4 ch */
		/* AllGather 2 MiB: Ring/Simple, 8 ch (2.30: channels not applied to AllGather) */
		SPOT(2, 2 * MiB, 1, 2, unclamped_ag(rel, 2) ? 0 : 8);
		/* AllGather 16 KiB: Ring (Tree is AllReduce only) */
		SPOT(2, 16 * KiB, 1, 0, unclamped_ag(rel, 2) ? 0 : 4);
	} else if (!strcmp(current_policy, "nvlink_ring_mid")) {
		SPOT(4, 16 * MiB, 1, 1, 0);    /* Ring/LL128 */
		SPOT(4, 100 * MiB, 1, 2, 0);   /* Ring/Simple */
		SPOT(4, 48 * MiB, -1, -1, 0);  /* the gap: NCCL's choice */
		SPOT(4, 1 * KiB, -1, -1, 0);
		SPOT(4, 1024 * MiB, -1, -1, 0);
		CHECK(da == 4 && dp == 2);     /* NCCL would run NVLS at 1 GiB */
	} else if (!strcmp(current_policy, "bad_channels")) {
		SPOT(4, 256 * MiB, -1, -1, 1);
		SPOT(0, 4, -1, -1, 1);
	} else if (!strcmp(current_policy, "table_rules")) {
		SPOT(4, 8 * KiB, 0, 0, 0);     /* rule 1 */
		SPOT(2, 8 * MiB, 1, 1, 0);     /* rule 2 */
		SPOT(3, 128 * MiB, 1, 2, 0);   /* rule 3 */
		SPOT(2, 8 * KiB, -1, -1, 0);   /* no rule */
	} else {
		/* noop, lookup_only, lookup_update: NCCL's choice everywhere */
		SPOT(4, 8 * KiB, -1, -1, 0);
		SPOT(4, 100 * MiB, -1, -1, 0);
	}
#undef SPOT
	CHECK(mock_comm_finalize(&c) == 0);
	}
}

static void sc_compose(void)
{
	/* compose_first: Ring/Simple/4; compose_double then doubles: 8. */
	CHECK(sweep_all(NULL, 1, 2, 8) == 0);
}

static void sc_compose_reversed(void)
{
	/* compose_double runs first and sees KEEP; compose_first's 4 stands. */
	CHECK(sweep_all(NULL, 1, 2, 4) == 0);
}

struct rule_case {
	const char *prog;
	int ra, rp, rn;
	const char *log_needle; /* logged once although it happens many times; NULL: nothing */
};
static const struct rule_case rule_cases[] = {
	{ "ask_nvls", 4, 2, 5, "marked unavailable" },
	{ "algo_only_tree", 0, -1, 0, "no protocol available" },
	{ "proto_only_ll128", -1, 1, 0, "no algorithm available" },
	{ "channels_huge", -1, -1, 200, "clamped" },
	{ "channels_negative", 1, 2, -3, "negative channel count" },
	{ "bad_algo", 9, 2, 2, "algorithm out of range" },
};
static const struct rule_case *current_rule;

static void sc_rule(void)
{
	const struct rule_case *r = current_rule;
	CHECK(sweep_all(NULL, r->ra, r->rp, r->rn) == 0);
	if (r->log_needle)
		CHECK(mock_log_count(r->log_needle) == 1);
}

/* echo_inputs: n_channels = abi_version * 8 + coll + 1 while seq < 50. */
static void sc_echo_inputs(void)
{
	static const struct {
		int release, max_version, version;
	} cases[] = { { 227, 0, 4 }, { 228, 0, 5 }, { 229, 0, 5 }, { 230, 0, 6 }, { 231, 0, 6 },
		      { 232, 0, 7 }, { 230, 3, 3 } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(mock_nccl_load_tuner(&m, cases[i].release, LIB, cases[i].max_version) == 0);
		CHECK(m.tuner_version == cases[i].version);
		CHECK(mock_comm_init(&m, &c, 0x77 + i, 8, 1) == 0);
		float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		int nch;
		for (int coll = 0; coll < 5; coll++) {
			mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, coll, MiB, 8, 1);
			CHECK(call_checked(&c, coll, MiB, before, after, &nch) == 0);
			CHECK(nch == (unclamped_ag(cases[i].release, coll) ? 0
						: cases[i].version * 8 + coll + 1));
		}
		/* seq counts per collective type: AllReduce reaches 50 first. */
		int last = -1;
		mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, 4, MiB, 8, 1);
		for (int k = 1; k < 60; k++) {
			CHECK(call_checked(&c, 4, MiB, before, after, &nch) == 0);
			if (k == 49)
				last = nch;
		}
		CHECK(last == cases[i].version * 8 + 5 && nch == 0);
		mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, 2, MiB, 8, 1);
		CHECK(call_checked(&c, 2, MiB, before, after, &nch) == 0);
		CHECK(nch == (unclamped_ag(cases[i].release, 2) ? 0 : cases[i].version * 8 + 3));
		CHECK(mock_comm_finalize(&c) == 0);
	}
}

static void sc_fault_chain(void)
{
	/* fault_after_write's Tree/LL/3 is discarded: compose_first's decision stands. */
	CHECK(sweep_all(NULL, 1, 2, 4) == 0);
	CHECK(mock_log_count_level(2, "policy fault") == 1);
}

static void sc_fault_alone(void)
{
	CHECK(sweep_all(NULL, -1, -1, 0) == 0);
	CHECK(mock_log_count_level(2, "policy fault") == 1);
}

/* A policy never overrides what the application forced for a call (2.31+ per-call
 * algSelection) nor what NCCL_ALGO forced (every release): algo_only_tree asks for Tree on
 * every collective; AllReduce on 2 nodes offers Tree. */
static void sc_forced_per_call(void)
{
	for (int rel = 231; rel <= 232; rel++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(load(&m, rel) == 0);
		CHECK(mock_comm_init(&m, &c, 0xf0cc + (uint64_t)rel, 16, 2) == 0);
		float t[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		mock_cost_table(t, MOCK_TOPO_MULTI_NODE, 4, MiB, 16, 2);
		struct mock_call call = {.coll = 4, .n_bytes = MiB, .force_alg_selection = 1,
					 .sym_us = -1.0f};
		struct mock_231_result r;
		CHECK(mock_collective_cfg(&c, t, &call, &r) == 0);
		CHECK(r.algo == 0 && r.calls == 1); /* no selection: the policy's Tree */
		call.alg_selection = 1u << 1;        /* the call allows Ring only */
		CHECK(mock_collective_cfg(&c, t, &call, &r) == 0);
		CHECK(r.algo == 1 && r.calls == 1);
		call.alg_selection = 1u << 6;        /* PAT: not offered, falls back (force 0) */
		call.force_alg_selection = 0;
		CHECK(mock_collective_cfg(&c, t, &call, &r) == 0);
		CHECK(r.calls == 2 && r.algo == 0);  /* the full menu again: the policy's Tree */
		call.force_alg_selection = 1;        /* forced: NCCL fails the call */
		CHECK(mock_collective_cfg(&c, t, &call, &r) == -2 && r.calls == 2);
		call.alg_selection = 1u << 1;
		call.env_forced = 1; /* NCCL_ALGO forces the function: the selection is ignored */
		CHECK(mock_collective_cfg(&c, t, &call, &r) == 0 && r.algo == 0);
		CHECK(mock_comm_finalize(&c) == 0);
	}
	/* said once, as "unavailable in NCCL's table" (the tuner cannot tell a per-call
	 * selection from the topology) */
	CHECK(mock_log_count("unavailable in NCCL's table") == 1);
	CHECK(mock_log_count("NCCL_ALGO/NCCL_PROTO;") == 0);
}

/* NCCL_ALGO=Ring (the scenario's environment; NCCL leaves every other algorithm -1): the
 * policy's Tree is never run, on any release, and the log names the environment. */
static void sc_forced_env(void)
{
	for (size_t r = 0; r < N_RELEASES; r++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(load(&m, all_releases[r]) == 0);
		CHECK(mock_comm_init(&m, &c, 0xe0cc + r, 8, 1) == 0);
		for (int coll = 0; coll < 5; coll++) {
			float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
			int nch, a, p;
			mock_cost_table(before, MOCK_TOPO_RING_ONLY, coll, MiB, 8, 1);
			CHECK(call_checked(&c, coll, MiB, before, after, &nch) == 0);
			if (all_releases[r] >= 231)
				CHECK(mock_select_231(before, after, &a, &p, NULL) == 0);
			else
				CHECK(mock_select(all_releases[r], after, &a, &p) == 0);
			CHECK(a == 1);
		}
		CHECK(mock_comm_finalize(&c) == 0);
	}
	CHECK(mock_log_count("was not applied: NCCL_ALGO/NCCL_PROTO") == 1);
}

static void sc_chunk(void)
{
	struct mock_nccl m;
	struct mock_comm c;
	size_t chunk;
	CHECK(load(&m, 230) == 0 && m.tuner_version == 6);
	CHECK(mock_comm_init(&m, &c, 0x5151, 8, 1) == 0);
	chunk = 131072;
	CHECK(mock_comm_get_chunk_size(&c, 4, 64 * MiB, 1, 2, 1, &chunk) == 0);
	CHECK(chunk == 1 << 20);
	chunk = 131072;
	CHECK(mock_comm_get_chunk_size(&c, 4, 64 * MiB, 1, 1, 1, &chunk) == 0);
	CHECK(chunk == 131072); /* 100 B is below LL128's grain: NCCL's value kept */
	chunk = 4096;
	CHECK(mock_comm_get_chunk_size(&c, 4, 64 * KiB, 1, 0, 1, &chunk) == 0);
	CHECK(chunk == 4096);
	CHECK(mock_log_count("below the protocol grain") == 1);
	/* The object has no SEC("tuner") program: getCollInfo stays pass-through. */
	CHECK(call_matches(&c, &shapes[0], 4, MiB, -1, -1, 0));
	CHECK(mock_comm_finalize(&c) == 0);
	/* 2.28 binds v5, which has no getChunkSize. */
	CHECK(load(&m, 228) == 0 && m.tuner_version == 5);
}

/* Random tables (-1, 0, NaN, ties) x random requests through the real library: the
 * result must always match the oracle and keep NCCL's invariants. */
static long random_iters = 20000;

static void random_requests(int release)
{
	struct mock_nccl m;
	struct mock_comm c;
	CHECK(load(&m, release) == 0);
	CHECK(mock_comm_init(&m, &c, 0xf00d, 8, 1) == 0);
	uint64_t x = 0x243f6a8885a308d3ull;
	int mismatches = 0, violations = 0;
	for (long it = 0; it < random_iters; it++) {
		float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		for (int a = 0; a < MOCK_NUM_ALGOS; a++) {
			for (int p = 0; p < MOCK_NUM_PROTOS; p++) {
				x ^= x << 13, x ^= x >> 7, x ^= x << 17;
				unsigned r = (unsigned)(x % 16);
				before[a][p] = r < 6 ? -1.0f : r == 6 ? 0.0f : r == 7 ? (float)NAN
					     : r == 8 ? -0.0f : (float)(x >> 40 & 7);
			}
		}
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		size_t bytes = (size_t)(x & 0xffff);
		int ra = (int)(bytes & 0xf) - 2, rp = (int)((bytes >> 4) & 7) - 2;
		int rn = (int)((bytes >> 8) & 0xff) - 20;
		memcpy(after, before, sizeof(before));
		int nch = 0;
		char why[200];
		int coll = (int)((x >> 20) % 5);
		int rc = mock_comm_get_coll_info(&c, coll, bytes, 1, 0, after, &nch);
		if (rc || mock_check_invariants(release, before, after, nch, 0, why, sizeof(why))) {
			if (violations++ < 3)
				fprintf(stderr, "violation rc=%d: %s\n", rc, why);
			continue;
		}
		struct oracle_result want;
		int a = -1, p = -1;
		oracle_expect(release, coll, before, ra, rp, rn, &want);
		if (release >= 231)
			mock_select_231(before, after, &a, &p, NULL);
		else
			mock_select(release, after, &a, &p);
		if (a != want.algo || p != want.proto || nch != want.n_channels) {
			if (mismatches++ < 3)
				fprintf(stderr, "request %d/%d/%d: got %d/%d/%d want %d/%d/%d\n", ra, rp,
					rn, a, p, nch, want.algo, want.proto, want.n_channels);
		}
	}
	CHECK(violations == 0);
	CHECK(mismatches == 0);
	CHECK(mock_comm_finalize(&c) == 0);
}

static void sc_random_requests(void)
{
	random_requests(230);
	random_requests(231);
}

/* ---- concurrency: 8 threads, 6 communicators of mixed shapes, every call checked ---- */
#define CONC_THREADS 8
#define CONC_COMMS 6
static struct mock_comm conc_comms[CONC_COMMS];
static const struct shape *conc_shapes[CONC_COMMS];
static atomic_int conc_bad, conc_calls;
static long conc_iters = 3000;

static void *conc_thread(void *arg)
{
	unsigned seed = 0x12345u + (unsigned)(uintptr_t)arg * 7919u;
	for (long i = 0; i < conc_iters; i++) {
		seed = seed * 1103515245u + 12345u;
		int ci = (int)((seed >> 8) % CONC_COMMS);
		int coll = (int)((seed >> 16) % 5);
		size_t bytes = sizes[(seed >> 20) % N_SIZES];
		int ra, rp, rn;
		native_request(native_size_aware, conc_shapes[ci], coll, bytes, &ra, &rp, &rn);
		if (!call_matches(&conc_comms[ci], conc_shapes[ci], coll, bytes, ra, rp, rn))
			atomic_fetch_add(&conc_bad, 1);
		atomic_fetch_add(&conc_calls, 1);
	}
	return NULL;
}

static void concurrency(int release)
{
	struct mock_nccl m;
	atomic_store(&conc_bad, 0);
	atomic_store(&conc_calls, 0);
	CHECK(load(&m, release) == 0);
	for (int i = 0; i < CONC_COMMS; i++) {
		conc_shapes[i] = &shapes[i % N_SHAPES];
		CHECK(mock_comm_init(&m, &conc_comms[i], 0xabc000 + (uint64_t)i, conc_shapes[i]->ranks,
				     conc_shapes[i]->nodes) == 0);
	}
	pthread_t th[CONC_THREADS];
	for (long i = 0; i < CONC_THREADS; i++)
		CHECK(pthread_create(&th[i], NULL, conc_thread, (void *)i) == 0);
	for (int i = 0; i < CONC_THREADS; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < CONC_COMMS; i++)
		CHECK(mock_comm_finalize(&conc_comms[i]) == 0);
	CHECK(atomic_load(&conc_calls) == CONC_THREADS * conc_iters);
	CHECK(atomic_load(&conc_bad) == 0);
}

static void sc_concurrency(void)
{
	conc_iters /= 2;
	concurrency(230);
	concurrency(231);
}

/* ---- 2.31 semantics: one collective, possibly two tuner calls ---- */
/* Rank A cannot run the symmetric kernel (unregistered buffers), rank B can. With tuner
 * programs attached and NCCLBPF_TUNER_SYM=pin (default) NCCL's choice is explicit, the
 * symmetric kernel never wins, NCCL calls the tuner once per collective on both ranks and
 * seq (reported by seq_probe through nChannels) stays identical. */
static void sc_231_seq_pinned(void)
{
	struct mock_nccl m;
	struct mock_comm a, b;
	CHECK(load(&m, 231) == 0 && m.tuner_version == 6);
	CHECK(mock_comm_init(&m, &a, 0x231a, 8, 1) == 0);
	CHECK(mock_comm_init(&m, &b, 0x231a, 8, 1) == 0); /* same commHash: two ranks */
	float t[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	int diverged = 0, sym = 0, extra_calls = 0, neg = 0;
	for (int i = 0; i < 200; i++) {
		int coll = i % 3 == 0 ? 2 : 4;
		size_t bytes = (size_t)(1 + i % 7) * KiB;
		mock_cost_table(t, MOCK_TOPO_NVLINK_NODE, coll, bytes, 8, 1);
		struct mock_231_result ra, rb;
		CHECK(mock_collective_231(&a, coll, bytes, 0, t, 0.5f, 0, &ra) == 0);
		CHECK(mock_collective_231(&b, coll, bytes, 1, t, 0.5f, 1, &rb) == 0);
		diverged += ra.tuner_channels != rb.tuner_channels;
		sym += ra.sym + rb.sym;
		extra_calls += (ra.calls - 1) + (rb.calls - 1);
		neg += ra.negative_written + rb.negative_written;
		CHECK(ra.algo == rb.algo && ra.proto == rb.proto && ra.n_channels == rb.n_channels);
		/* nChannels is a cap: NCCL runs min(its count, the plugin's) */
		CHECK(ra.n_channels == (ra.tuner_channels < a.nccl_channels ? ra.tuner_channels
									  : a.nccl_channels));
	}
	CHECK(diverged == 0);
	CHECK(sym == 0);
	CHECK(extra_calls == 0);
	CHECK(neg == 0);
	CHECK(mock_comm_finalize(&a) == 0);
	CHECK(mock_comm_finalize(&b) == 0);
}

/* The same with NCCLBPF_TUNER_SYM=compete: rank B runs the symmetric kernel, rank A falls
 * back and NCCL calls its tuner twice, so seq counts calls and the ranks' seq diverge.
 * (Shows that the mock really makes the second call the pinned test rules out.) */
static void sc_231_seq_compete(void)
{
	struct mock_nccl m;
	struct mock_comm a, b;
	CHECK(load(&m, 231) == 0);
	CHECK(mock_comm_init(&m, &a, 0x231b, 8, 1) == 0);
	CHECK(mock_comm_init(&m, &b, 0x231b, 8, 1) == 0);
	float t[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	int diverged = 0, sym_b = 0, calls_a = 0;
	for (int i = 0; i < 20; i++) {
		mock_cost_table(t, MOCK_TOPO_NVLINK_NODE, 4, 4 * KiB, 8, 1);
		struct mock_231_result ra, rb;
		CHECK(mock_collective_231(&a, 4, 4 * KiB, 0, t, 0.5f, 0, &ra) == 0);
		CHECK(mock_collective_231(&b, 4, 4 * KiB, 1, t, 0.5f, 1, &rb) == 0);
		calls_a += ra.calls;
		sym_b += rb.sym;
		diverged += ra.tuner_channels != ((i % 60) + 1); /* B's seq would give this */
	}
	CHECK(calls_a == 40);
	CHECK(sym_b == 20);
	CHECK(diverged > 0);
	CHECK(mock_comm_finalize(&a) == 0);
	CHECK(mock_comm_finalize(&b) == 0);
}

/* NVLink-domain info and shape reach the policy (v5/v6: from init; v3/v4: shape only). */
static void sc_nvl_fields(void)
{
	static const struct {
		int release, max_version, want;
	} cases[] = { { 227, 0, 32 }, { 228, 0, 8 + 4 + 32 }, { 230, 0, 8 + 4 + 32 },
		      { 231, 0, 8 + 4 + 32 }, { 232, 0, 8 + 4 + 32 } };
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(mock_nccl_load_tuner(&m, cases[i].release, LIB, cases[i].max_version) == 0);
		CHECK(mock_comm_init(&m, &c, 0x4e56 + i, 8, 1) == 0);
		float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		int nch;
		mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, 4, MiB, 8, 1);
		CHECK(call_checked(&c, 4, MiB, before, after, &nch) == 0);
		CHECK(nch == cases[i].want);
		CHECK(mock_comm_finalize(&c) == 0);
		/* 2 nodes x 8: two domains of 8 */
		CHECK(mock_comm_init(&m, &c, 0x4e66 + i, 16, 2) == 0);
		mock_cost_table(before, MOCK_TOPO_MULTI_NODE, 4, MiB, 16, 2);
		CHECK(call_checked(&c, 4, MiB, before, after, &nch) == 0);
		CHECK(nch == (cases[i].release >= 228 ? 8 + 8 + 32 : 32));
		CHECK(mock_comm_finalize(&c) == 0);
	}
}

/* band_seq counts the collectives of one (type, size band) on a communicator, whatever
 * runs between them; every release, and 2.31's call-per-collective rule with pinning. */
static void sc_band_seq(void)
{
	/* AllReduce 4 KiB, 64 KiB, AllGather 4 KiB, AllReduce 5000 B (the 4 KiB band), 64 KiB,
	 * 7 KiB (4 KiB band), 8 KiB (the next) */
	static const struct { int coll; size_t bytes; int want, per_round; } calls[] = {
		{4, 4 * KiB, 0, 3}, {4, 64 * KiB, 0, 2}, {2, 4 * KiB, 0, 1}, {4, 5000, 1, 3},
		{4, 64 * KiB, 1, 2}, {4, 7 * KiB, 2, 3}, {4, 8 * KiB, 0, 1},
	};
	for (size_t r = 0; r < N_RELEASES; r++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(load(&m, all_releases[r]) == 0);
		CHECK(mock_comm_init(&m, &c, 0xba4d + r, 8, 1) == 0);
		for (int round = 0; round < 3; round++)
			for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
				float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
				int nch;
				mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, calls[i].coll, calls[i].bytes, 8, 1);
				CHECK(call_checked(&c, calls[i].coll, calls[i].bytes, before, after, &nch) == 0);
				/* AllGather's channels are not applied on 2.29/2.30 */
				CHECK(nch == (unclamped_ag(all_releases[r], calls[i].coll)
						      ? 0
						      : round * calls[i].per_round + calls[i].want + 1));
			}
		CHECK(mock_comm_finalize(&c) == 0);
	}
}


/* Index of bandwidth table t (NCCLBPF_BW_*), compcap row r, scale sc in NCCL's constants
 * of a tuner version (v7: 5 rows per table, else 4). */
static int bw_index(int tuner_version, int t, int r, int sc)
{
	int rows = tuner_version >= 7 ? 5 : 4;
	return 84 + (t * rows + r) * 3 + sc;
}

/* tuner/init edits NCCL's tuning constants within bounds (v5+ hosts; v3/v4 pass none). */
static void sc_init_constants(void)
{
	for (size_t r = 0; r < N_RELEASES; r++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(load(&m, all_releases[r]) == 0);
		CHECK(mock_comm_init(&m, &c, 0x1f00 + r, 8, 1) == 0);
		if (m.tuner_version >= 5) {
			CHECK(fabs(c.constants[3] - 2 * (4.4 + 0.3 * 3)) < 1e-9); /* Ring/LL latency */
			CHECK(c.constants[bw_index(m.tuner_version, NCCLBPF_BW_TREE, 0, 0)] ==
			      12.345);                               /* tree bw, compcap 0 */
			CHECK(c.constants[21 + 5] == 0.6 + 0.07 * 5); /* out of bounds: kept */
			CHECK(c.constants[0] == 4.4);                 /* untouched: exact */
		}
		CHECK(mock_comm_finalize(&c) == 0);
	}
	CHECK(mock_log_count("tuner/init changed 2 of NCCL's tuning constants") == 5); /* v5+ */
	CHECK(mock_log_count("tuning constant out of bounds") == 1);
}

/* tuner/init addresses compute-capability rows the same way on every layout: row 3 in the
 * tables, row 4 (v7 only) in compcap4_bw_mbps; a v5/v6 host's 144 doubles never see a write
 * for row 4 (ignored, logged once), a v7 host's 159 get both, nothing else changes. */
static void sc_init_rows(void)
{
	int v7_seen = 0;
	for (size_t r = 0; r < N_RELEASES; r++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(load(&m, all_releases[r]) == 0);
		CHECK(mock_comm_init(&m, &c, 0x2f00 + r, 8, 1) == 0);
		if (m.tuner_version >= 5) {
			double want[159];
			int n = mock_constants_defaults(want, m.tuner_version);
			CHECK(n == c.n_constants && n == (m.tuner_version >= 7 ? 159 : 144));
			want[bw_index(m.tuner_version, NCCLBPF_BW_TREE, NCCLBPF_COMPCAP_BLACKWELL, 2)] =
				33.333;
			if (m.tuner_version >= 7) {
				want[bw_index(7, NCCLBPF_BW_TREE, NCCLBPF_COMPCAP_RUBIN, 2)] = 55.555;
				want[bw_index(7, NCCLBPF_BW_LL_MAX, NCCLBPF_COMPCAP_RUBIN, 0)] = 0.5;
				v7_seen++;
			}
			int diff = 0;
			for (int i = 0; i < n; i++)
				if (c.constants[i] != want[i]) {
					if (diff++ < 3)
						fprintf(stderr, "v%d constant %d: %g, want %g\n",
							m.tuner_version, i, c.constants[i], want[i]);
				}
			CHECK(diff == 0);
		}
		CHECK(mock_comm_finalize(&c) == 0);
	}
	CHECK(v7_seen == 1);
	/* 2.28-2.31 (v5/v6): the row-4 writes have no place: logged once, counted */
	CHECK(mock_log_count("compute-capability row 4 written") == 1);
	CHECK(mock_log_count("(5 compute-capability rows)") == 1);
	CHECK(mock_log_count("(4 compute-capability rows)") == 4);
}

/* ---- chaining: NCCLBPF_TUNER_INNER ---- */
#define FAKE(n) NB_BUILD_DIR "/tests/fake_plugins/lib" n ".so"
struct fake_tuner_state {
	int inits, finalizes, calls, chunk_calls;
	int last_nvl[3];
	int had_constants;
	uint64_t last_comm_id;
};
/* The inner plugin's counters, from the copy ncclbpf loaded (same path: same link map). */
static struct fake_tuner_state *fake_state(const char *path)
{
	void *dl = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	return dl ? dlsym(dl, "fake_tuner_state") : NULL;
}

/* One AllReduce of 1 MiB on an 8-GPU NVLink node: what NCCL ends up with. */
static void one_call(struct mock_comm *c, int *a, int *p, int *nch)
{
	float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, 4, MiB, 8, 1);
	*a = *p = -1;
	CHECK(call_checked(c, 4, MiB, before, after, nch) == 0);
	if (c->nccl->release >= 231)
		mock_select_231(before, after, a, p, NULL);
	else
		mock_select(c->nccl->release, after, a, p);
}

static void sc_inner_alone(void)
{
	/* no policy: ncclbpf is a transparent wrapper of the inner tuner, on every release and
	 * with every pairing of host and inner ABI version */
	for (size_t r = 0; r < N_RELEASES; r++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(load(&m, all_releases[r]) == 0);
		CHECK(mock_comm_init(&m, &c, 0x1a00 + r, 8, 1) == 0);
		int a, p, nch;
		one_call(&c, &a, &p, &nch);
		CHECK(a == 0 && p == 1 && nch == 7); /* the inner's Tree/LL128, 7 channels */
		if (m.tuner_version == 6) {
			size_t chunk = 131072;
			CHECK(mock_comm_get_chunk_size(&c, 4, MiB, 0, 1, 1, &chunk) == 0);
			CHECK(chunk == 262144); /* the inner's getChunkSize ran */
		}
		CHECK(mock_comm_finalize(&c) == 0);
	}
	struct fake_tuner_state *st = fake_state(getenv("NCCLBPF_TUNER_INNER"));
	CHECK(st != NULL);
	if (!st)
		return;
	CHECK(st->inits == (int)N_RELEASES && st->finalizes == (int)N_RELEASES);
	CHECK(st->calls == (int)N_RELEASES);
	CHECK(st->had_constants); /* a v4 host gives a v6 inner scratch constants */
	CHECK(st->last_nvl[0] == 1 && st->last_nvl[1] == 8 && st->last_nvl[2] == 8);
	CHECK(mock_log_count("runs before the policies") == 1);
}

static void sc_inner_then_policy(void)
{
	/* seq_probe keeps algorithm/protocol (NCCL's = the inner's, pinned) and sets channels */
	for (int rel = 230; rel <= 231; rel++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(load(&m, rel) == 0);
		CHECK(mock_comm_init(&m, &c, 0x1b00 + (uint64_t)rel, 8, 1) == 0);
		for (int i = 0; i < 3; i++) {
			int a, p, nch;
			one_call(&c, &a, &p, &nch);
			CHECK(a == 0 && p == 1);
			CHECK(nch == i + 1); /* the policy's decision on top of the inner's */
		}
		/* an inner plugin: every decision takes the general path (tuner_core.c) */
		CHECK_EQ_U64(atomic_load(&((const struct tuner_comm *)c.ctx)->stats.general), 3);
		CHECK(mock_comm_finalize(&c) == 0);
	}
}

static void sc_inner_v4(void)
{
	struct mock_nccl m;
	struct mock_comm c;
	CHECK(load(&m, 231) == 0);
	CHECK(mock_comm_init(&m, &c, 0x1c00, 8, 1) == 0);
	int a, p, nch;
	one_call(&c, &a, &p, &nch);
	CHECK(a == 0 && p == 1 && nch == 7);
	CHECK(mock_comm_finalize(&c) == 0);
	CHECK(mock_log_count("ncclTunerPlugin_v4") >= 1);
}

/* Failing or misbehaving inner plugins never fail NCCL and never change its choice. */
static void sc_inner_bad(void)
{
	for (size_t r = 0; r < N_RELEASES; r++) {
		struct mock_nccl m;
		struct mock_comm c;
		CHECK(load(&m, all_releases[r]) == 0);
		CHECK(mock_comm_init(&m, &c, 0x1d00 + r, 8, 1) == 0); /* NCCL's init succeeds */
		float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
		int nch;
		mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, 4, MiB, 8, 1);
		CHECK(call_checked(&c, 4, MiB, before, after, &nch) == 0);
		CHECK(memcmp(before, after, sizeof(before)) == 0 && nch == 0); /* untouched */
		CHECK(mock_comm_finalize(&c) == 0);
	}
	const char *inner = getenv("NCCLBPF_TUNER_INNER");
	if (strstr(inner, "fail"))
		CHECK(mock_log_count_level(2, "init failed") == (int)N_RELEASES);
	else if (strstr(inner, "err"))
		CHECK(mock_log_count_level(2, "its changes were undone") == 1); /* once */
	else
		CHECK(mock_log_count_level(2, "not loaded") == 1);
}

/* NCCLBPF_TUNER_INNER naming ncclbpf itself: one WARN saying so, NCCL's choice untouched
 * (regression: a second WARN claimed the library exports no tuner symbol). */
static void sc_inner_self(void)
{
	struct mock_nccl m;
	struct mock_comm c;
	CHECK(load(&m, 231) == 0);
	CHECK(mock_comm_init(&m, &c, 0x1e00, 8, 1) == 0);
	float before[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS], after[MOCK_NUM_ALGOS][MOCK_NUM_PROTOS];
	int nch;
	mock_cost_table(before, MOCK_TOPO_NVLINK_NODE, 4, MiB, 8, 1);
	CHECK(call_checked(&c, 4, MiB, before, after, &nch) == 0);
	CHECK(memcmp(before, after, sizeof(before)) == 0 && nch == 0);
	CHECK(mock_comm_finalize(&c) == 0);
	CHECK(mock_log_count_level(2, "is ncclbpf itself") == 1);
	CHECK(mock_log_count_level(2, "exports no") == 0);
}

/* Which path each decision took (tuner_core.c: the straight line, or the general path
 * with everything optional), read from the communicator's counter behind `ncclbpf ctl
 * status` ("general_path"): straight only when nothing optional is on. The decisions must be
 * the same either way: every call is checked against the oracle for the programs in
 * tests/tuner/progs/paths.bpf.c (Ring/Simple above 1 MiB, NCCL's choice below, pinned). */
static int path_release = 230;
static int path_general_want; /* decisions expected on the general path, of 64 */

static void sc_decision_path(void)
{
	struct mock_nccl m;
	struct mock_comm c;
	CHECK(load(&m, path_release) == 0);
	/* one rank: paths.bpf.c declares an agreed map, and a multi-rank communicator
	 * without a rendezvous falls back at collective 0 (docs/agreement.md "Joining"); the
	 * oracle's cost tables are shapes[0]'s either way */
	CHECK(mock_comm_init(&m, &c, path_release >= 228 ? 0x9a7e : 0, 1, 1) == 0);
	for (int i = 0; i < 64; i++) {
		int coll = i % 5;
		size_t bytes = (size_t)1 << (4 + (i * 7) % 26);
		bool big = bytes > MiB;
		CHECK(call_matches(&c, &shapes[0], coll, bytes, big ? 1 : -1, big ? 2 : -1, 0));
	}
	const struct tuner_comm *tc = c.ctx;
	CHECK(tc != NULL);
	if (tc) {
		uint64_t general = atomic_load(&tc->stats.general);
		CHECK_EQ_U64(general, (uint64_t)path_general_want);
		CHECK_EQ_U64(atomic_load(&tc->stats.calls), 64);
	}
	CHECK(mock_comm_finalize(&c) == 0);
}

static void path_scenario(const char *name, const char *spec, const char *const *env,
			  int release, int general_want)
{
	path_release = release;
	path_general_want = general_want;
	run_scenario(name, spec, env, sc_decision_path);
}

int main(int argc, char **argv)
{
	/* Optional budget: iterations per thread of the concurrency test; the random test runs
	 * 7x as many. */
	if (argc > 1 && atol(argv[1]) > 0) {
		conc_iters = atol(argv[1]);
		random_iters = conc_iters * 7;
	}
	static const char *const jit_on[] = { "NCCLBPF_JIT", "1", NULL };
	static const char *const jit_off[] = { "NCCLBPF_JIT", "0", NULL };
	static const char *const warn_jit[] = { "NCCLBPF_VERIFY", "warn", "NCCLBPF_JIT", "1", NULL };
	static const char *const warn_interp[] = { "NCCLBPF_VERIFY", "warn", "NCCLBPF_JIT", "0",
						   NULL };

	run_scenario("no policy, NCCL 2.27..2.31 + v3", NULL, NULL, sc_no_policy);
	run_scenario("plugin name resolution", NULL, NULL, sc_name_resolution);
	run_scenario("bad policy path", "/nonexistent/missing_policy.bpf.o", NULL, sc_bad_path);
	run_scenario("rejected policy", PROG("reject_ctx_write"), NULL, sc_rejected);
	run_scenario("rejected + good policy", PROG("reject_ctx_write") "," POL("size_aware"), NULL,
		     sc_rejected_then_good);

	static const char *const shipped[] = { "noop",       "size_aware",    "nvlink_ring_mid",
					       "bad_channels", "lookup_only", "lookup_update",
					       "table_rules" };
	for (size_t i = 0; i < sizeof(shipped) / sizeof(shipped[0]); i++) {
		char path[512], name[128];
		snprintf(path, sizeof(path), NB_BUILD_DIR "/policies/%s.bpf.o", shipped[i]);
		current_policy = shipped[i];
		snprintf(name, sizeof(name), "policy %s (JIT)", shipped[i]);
		run_scenario(name, path, jit_on, sc_shipped_policy);
		snprintf(name, sizeof(name), "policy %s (interpreter)", shipped[i]);
		run_scenario(name, path, jit_off, sc_shipped_policy);
	}

	run_scenario("composition first,double", PROG("compose_first") "," PROG("compose_double"),
		     NULL, sc_compose);
	run_scenario("composition double,first", PROG("compose_double") "," PROG("compose_first"),
		     NULL, sc_compose_reversed);
	for (size_t i = 0; i < sizeof(rule_cases) / sizeof(rule_cases[0]); i++) {
		char spec[512], name[128];
		snprintf(spec, sizeof(spec), "%s:%s", PROG("decisions"), rule_cases[i].prog);
		snprintf(name, sizeof(name), "rule %s", rule_cases[i].prog);
		current_rule = &rule_cases[i];
		run_scenario(name, spec, NULL, sc_rule);
	}
	run_scenario("context inputs per ABI version", PROG("decisions") ":echo_inputs", NULL,
		     sc_echo_inputs);
	run_scenario("fault in a chain (JIT)", PROG("compose_first") "," PROG("fault_after_write"),
		     warn_jit, sc_fault_chain);
	run_scenario("fault in a chain (interpreter)",
		     PROG("compose_first") "," PROG("fault_after_write"), warn_interp,
		     sc_fault_chain);
	run_scenario("fault alone", PROG("fault_after_write"), warn_jit, sc_fault_alone);
	run_scenario("random tables x random requests", PROG("decisions") ":from_bytes", NULL,
		     sc_random_requests);
	run_scenario("v6 getChunkSize (tuner/chunk)", PROG("chunk"), NULL, sc_chunk);
	run_scenario("8 threads x 6 comms, size_aware", POL("size_aware"), NULL, sc_concurrency);
	static const char *const ring_env[] = { "NCCL_ALGO", "Ring", "NCCL_DEBUG", "INFO", NULL };
	static const char *const info_env[] = { "NCCL_DEBUG", "INFO", NULL };
	run_scenario("per-call algSelection never overridden", PROG("decisions") ":algo_only_tree",
		     info_env, sc_forced_per_call);
	run_scenario("NCCL_ALGO never overridden", PROG("decisions") ":algo_only_tree", ring_env,
		     sc_forced_env);
	static const char *const compete[] = { "NCCLBPF_TUNER_SYM", "compete", NULL };
	run_scenario("2.31: sym fallback, pinned: seq equal", PROG("probes") ":seq_probe", NULL,
		     sc_231_seq_pinned);
	run_scenario("2.31: sym fallback, compete: 2 calls", PROG("probes") ":seq_probe", compete,
		     sc_231_seq_compete);
	run_scenario("NVLink-domain info + shape in ctx", PROG("probes") ":nvl_probe", NULL,
		     sc_nvl_fields);
	run_scenario("band_seq per (type, size band)", PROG("probes") ":band_probe", NULL,
		     sc_band_seq);
	static const char *const info[] = { "NCCL_DEBUG", "INFO", NULL };
	run_scenario("tuner/init: NCCL's tuning constants", PROG("probes") ":init_probe", info,
		     sc_init_constants);
	run_scenario("tuner/init: compute-capability rows (v7: 5)", PROG("probes") ":init_rows",
		     info, sc_init_rows);
	static const char *const inner6[] = { "NCCLBPF_TUNER_INNER", FAKE("fake_tuner_v6"), NULL };
	static const char *const inner4[] = { "NCCLBPF_TUNER_INNER", FAKE("fake_tuner_v4"), NULL };
	static const char *const inner_fail[] = { "NCCLBPF_TUNER_INNER", FAKE("fake_tuner_fail"),
						  NULL };
	static const char *const inner_err[] = { "NCCLBPF_TUNER_INNER", FAKE("fake_tuner_err"),
						 NULL };
	static const char *const inner_missing[] = { "NCCLBPF_TUNER_INNER",
						     "/nonexistent/libnccl-tuner-x.so", NULL };
	run_scenario("inner tuner v6, no policy", NULL, inner6, sc_inner_alone);
	run_scenario("inner tuner v6 + seq_probe", PROG("probes") ":seq_probe", inner6,
		     sc_inner_then_policy);
	run_scenario("inner tuner v4 on a v6 host", NULL, inner4, sc_inner_v4);
	run_scenario("inner tuner: init fails", NULL, inner_fail, sc_inner_bad);
	run_scenario("inner tuner: returns errors", NULL, inner_err, sc_inner_bad);
	run_scenario("inner tuner: missing library", NULL, inner_missing, sc_inner_bad);
	static const char *const inner_self[] = { "NCCLBPF_TUNER_INNER", LIB, NULL };
	run_scenario("inner tuner: ncclbpf itself", NULL, inner_self, sc_inner_self);

	/* Decision paths. Straight: one direct program; the first decision of a comm with a
	 * commHash is general (the agreement layer's first collective decides whether a group
	 * forms), none without one (v4: no agreement state at all). */
	path_scenario("path: direct program (straight)", PROG("paths") ":direct", jit_on, 230, 1);
	path_scenario("path: direct program, v4 (straight)", PROG("paths") ":direct", jit_on, 227,
		      0);
	path_scenario("path: hash map (straight, in an epoch)", PROG("paths") ":with_hash", jit_on,
		      230, 1);
	static const char *const metrics[] = { "NCCLBPF_JIT", "1", "NCCLBPF_METRICS_FILE",
					       NB_BUILD_DIR "/tests/tuner/paths_metrics.prom",
					       NULL };
	static const char *const dlog[] = { "NCCLBPF_JIT", "1", "NCCLBPF_DECISION_LOG",
					    NB_BUILD_DIR "/tests/tuner", NULL };
	path_scenario("path: interpreter (general)", PROG("paths") ":direct", jit_off, 230, 64);
	path_scenario("path: metrics on (general)", PROG("paths") ":direct", metrics, 230, 64);
	path_scenario("path: decision log on (general)", PROG("paths") ":direct", dlog, 230, 64);
	path_scenario("path: two programs (general)",
		      PROG("paths") ":direct," PROG("paths") ":direct", jit_on, 230, 64);
	path_scenario("path: bpf-to-bpf call (general)", PROG("paths") ":with_call", jit_on, 230,
		      64);
	path_scenario("path: agreed map (general)", PROG("paths") ":agreed_read", jit_on, 230, 64);
	TEST_DONE();
}

/* The bandit policy (policies/bandit.bpf.c) against synthetic per-arm latency models.
 *
 * R ranks, each with its own copy of the object (as R processes would have), run the tuner
 * program for every collective and the profiler program when it completes. The agreement
 * layer's semantics (policy.h, "agreed maps") are emulated here exactly: profiler writes go
 * to the rank's contribution; at the end of every epoch of K collectives the contributions
 * are reduced word by word over the ranks that contributed (MAX for bandit_stat, MIN for
 * bandit_count) and published; the tuner at comm_seq s reads version floor(s/K) - 1.
 * The transport of the real agree module is tested with it (src/agree); this test is about
 * what the policy does with the published view.
 *
 * Scenarios: NCCL's choice (AUTO) is wrong; AUTO is best; another arm is faster than AUTO
 * but within the safety gate; the best arm degrades halfway (drift); three sizes
 * interleaved. Checks: every rank's decision log is identical; convergence to the best arm
 * within (warm-up + M) x arms collectives plus the two-epoch agreement lag; after
 * convergence no arm slower than AUTO is exploited, nor one within the gate; unavailable
 * pairs are never chosen; re-exploration after drift and convergence to the new best.
 *
 *   test_bandit build/policies/bandit.bpf.o [build/ncclbpf]
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ncclbpf/ncclbpf.h>
#include <ncclbpf/policy.h>

#include "maps/map.h"
#include "maps/map_internal.h"
#include "runtime/runtime.h"
#include "test_util.h"

#define R 4               /* ranks */
#define K 16              /* epoch: BANDIT_EPOCH_LOG2 = 4 in the policy */
#define WINDOW 16         /* M: valid samples per arm (2 windows of 8, cfg_explore_windows) */
#define WARMUP 1
#define MAX_COLL 6000
#define NPAIR (NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS)

struct rank {
	struct ncclbpf_object *obj;
	struct ncclbpf_program *tuner, *prof;
	struct nb_map *stat, *cnt;
	uint8_t *contrib_stat, *contrib_cnt;
	struct nb_map_binding rd, wr;
};

static struct rank ranks[R];
static uint8_t *pub_stat, *pub_cnt;
static size_t stat_bytes, cnt_bytes;
static const char *obj_path;
static int no_profiler; /* the profiler plugin is not loaded: nothing is ever measured */

/* decisions of every rank, per collective: algo * 8 + proto (KEEP = -1 -> 7) */
static int decision[R][MAX_COLL];

static uint64_t rng = 88172645463325252ull;
static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (double)(rng >> 11) / 9007199254740992.0;
}
static double gauss(void)
{
	double u = uniform() + 1e-12, v = uniform();
	return sqrt(-2 * log(u)) * cos(6.283185307179586 * v);
}

static void load_ranks(void)
{
	char err[2048];
	for (int r = 0; r < R; r++) {
		struct rank *k = &ranks[r];
		memset(k, 0, sizeof(*k));
		CHECK(ncclbpf_object_open_file(obj_path, &k->obj, err, sizeof(err)) == 0);
		if (!k->obj) {
			fprintf(stderr, "%s\n", err);
			exit(1);
		}
		k->tuner = ncclbpf_object_find_program(k->obj, "bandit_pick");
		k->prof = ncclbpf_object_find_program(k->obj, "bandit_observe");
		struct ncclbpf_prepare_opts o = {.sz = sizeof(o), .verify_mode = NCCLBPF_VERIFY_STRICT};
		CHECK(k->tuner && ncclbpf_program_prepare(k->tuner, NCCLBPF_HOOK_TUNER, &o, err, sizeof(err)) == 0);
		CHECK(k->prof && ncclbpf_program_prepare(k->prof, NCCLBPF_HOOK_PROFILER, &o, err, sizeof(err)) == 0);
		k->stat = ncclbpf_object_find_map(k->obj, "bandit_stat")->map;
		k->cnt = ncclbpf_object_find_map(k->obj, "bandit_count")->map;
		int ss = map_agreed_slot(k->stat), cs = map_agreed_slot(k->cnt);
		CHECK(ss >= 0 && cs >= 0);
		stat_bytes = (size_t)map_array_stride(k->stat) * k->stat->max_entries;
		cnt_bytes = (size_t)map_array_stride(k->cnt) * k->cnt->max_entries;
		k->contrib_stat = calloc(1, stat_bytes);
		k->contrib_cnt = calloc(1, cnt_bytes);
		k->wr.mode = NB_BIND_WRITE;
		k->wr.base[ss] = k->contrib_stat;
		k->wr.base[cs] = k->contrib_cnt;
		k->rd.mode = NB_BIND_READ;
		if (!pub_stat) {
			pub_stat = calloc(1, stat_bytes);
			pub_cnt = calloc(1, cnt_bytes);
		}
		k->rd.base[ss] = pub_stat;
		k->rd.base[cs] = pub_cnt;
	}
}

static void unload_ranks(void)
{
	for (int r = 0; r < R; r++) {
		ncclbpf_object_close(ranks[r].obj);
		free(ranks[r].contrib_stat);
		free(ranks[r].contrib_cnt);
	}
	free(pub_stat);
	free(pub_cnt);
	pub_stat = pub_cnt = NULL;
}

/* Word-wise reduction over the ranks that contributed an entry (non-zero bytes). */
static void reduce(uint8_t *pub, size_t bytes, size_t stride, int is_max, int which)
{
	for (size_t e = 0; e < bytes; e += stride) {
		int any = 0;
		for (size_t w = 0; w < stride; w += 8) {
			uint64_t acc = 0;
			int first = 1;
			for (int r = 0; r < R; r++) {
				const uint8_t *c = (which ? ranks[r].contrib_cnt : ranks[r].contrib_stat) + e;
				int contributed = 0;
				for (size_t i = 0; i < stride; i++)
					contributed |= c[i];
				if (!contributed)
					continue;
				uint64_t v;
				memcpy(&v, c + w, 8);
				if (first || (is_max ? v > acc : v < acc))
					acc = v;
				first = 0;
				any = 1;
			}
			memcpy(pub + e + w, &acc, 8);
		}
		(void)any;
	}
}

static void publish(void)
{
	reduce(pub_stat, stat_bytes, map_array_stride(ranks[0].stat), 1, 0);
	reduce(pub_cnt, cnt_bytes, map_array_stride(ranks[0].cnt), 0, 1);
}

/* ---- scenarios ---- */
struct model {
	const char *name;
	size_t bytes;
	int auto_pair;              /* algo * 3 + proto NCCL's cost table ranks first */
	double mean_us[NPAIR];      /* 0 = unavailable */
	int drift_at;               /* collective index where drift applies (0 = none) */
	double drift_mean_us[NPAIR];
};

static int pair_of(int algo, int proto)
{
	return algo * NCCLBPF_NUM_PROTOS + proto;
}

/* NCCL's selection: the forced pair, or the cost table's least. */
static int resolve(const struct ncclbpf_tuner_ctx *ctx, int auto_pair)
{
	if (ctx->algo >= 0 && ctx->proto >= 0)
		return pair_of(ctx->algo, ctx->proto);
	return auto_pair;
}

static void fill_ctx(struct ncclbpf_tuner_ctx *ctx, const struct model *m, uint64_t seq, uint64_t comm_seq)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->comm_id = 0x1234;
	ctx->n_bytes = m->bytes;
	ctx->seq = seq;
	ctx->coll_type = NCCLBPF_COLL_ALLREDUCE;
	ctx->n_ranks = R;
	ctx->n_nodes = R;
	ctx->abi_version = 5;
	ctx->comm_seq = comm_seq;
	ctx->algo = NCCLBPF_ALGO_KEEP;
	ctx->proto = NCCLBPF_PROTO_KEEP;
	for (int i = 0; i < NPAIR; i++) {
		float c = -1.0f;
		if (m->mean_us[i] > 0) {
			ctx->avail_mask |= 1u << i;
			/* NCCL's estimate: AUTO cheapest; the rest in an order unrelated to reality */
			c = i == m->auto_pair ? 10.0f : 20.0f + (float)((i * 7) % 11);
		}
		((float *)ctx->cost)[i] = c;
	}
}

struct run_result {
	int converged_at[3];  /* per model: first collective index of the final stable phase */
	int final_pair[3];
	int bad_exploit;      /* exploited arms slower than AUTO (after convergence) */
	int unavailable;      /* decisions naming a pair NCCL marked unavailable */
	int mismatches;       /* collectives where ranks decided differently */
};

/* Runs n collectives cycling through nm models (one band each). */
static void run(const struct model *models, int nm, int n, struct run_result *res)
{
	memset(res, 0, sizeof(*res));
	memset(decision, 0, sizeof(decision));
	load_ranks();
	uint64_t seq = 0;
	int last_change[3] = {0, 0, 0}, last_pair[3] = {-2, -2, -2};
	for (int s = 0; s < n && s < MAX_COLL; s++) {
		const struct model *m = &models[s % nm];
		int mi = s % nm;
		int chosen[R];
		for (int r = 0; r < R; r++) {
			struct ncclbpf_tuner_ctx ctx;
			fill_ctx(&ctx, m, seq, (uint64_t)s);
			map_agreed_bind(&ranks[r].rd);
			uint64_t ret = 0;
			char err[256];
			CHECK(ncclbpf_program_run(ranks[r].tuner, &ctx, sizeof(ctx), &ret, err, sizeof(err)) == 0);
			map_agreed_bind(NULL);
			decision[r][s] = (ctx.algo + 1) * 8 + (ctx.proto + 1);
			if (ctx.algo >= 0 && !((ctx.avail_mask >> pair_of(ctx.algo, ctx.proto)) & 1))
				res->unavailable++;
			chosen[r] = resolve(&ctx, m->auto_pair);
		}
		for (int r = 1; r < R; r++)
			if (decision[r][s] != decision[0][s])
				res->mismatches++;
		seq++;
		int pair = chosen[0];
		if (pair != last_pair[mi]) {
			last_pair[mi] = pair;
			last_change[mi] = s;
		}
		const double *mean = (m->drift_at && s >= m->drift_at) ? m->drift_mean_us : m->mean_us;
		/* the collective: common noise, occasional outliers, per-rank jitter and skew */
		double t = mean[pair] * exp(0.08 * gauss());
		if (uniform() < 0.02)
			t *= 3;
		for (int r = 0; r < R && !no_profiler; r++) {
			struct ncclbpf_profiler_ctx pc;
			memset(&pc, 0, sizeof(pc));
			pc.comm_id = 0x1234;
			pc.seq = seq - 1;
			pc.n_bytes = m->bytes;
			pc.gpu_ns = (uint64_t)(t * 1000 * (1 + 0.02 * uniform() + 0.01 * r));
			pc.host_ns = pc.gpu_ns + 3000;
			pc.coll_type = NCCLBPF_COLL_ALLREDUCE;
			pc.algo = pair / NCCLBPF_NUM_PROTOS;
			pc.proto = pair % NCCLBPF_NUM_PROTOS;
			pc.rank = (uint32_t)r;
			pc.n_ranks = R;
			pc.n_nodes = R;
			pc.size_bucket = ncclbpf_size_bucket(m->bytes);
			map_agreed_bind(&ranks[r].wr);
			uint64_t ret = 0;
			char err[256];
			CHECK(ncclbpf_program_run(ranks[r].prof, &pc, sizeof(pc), &ret, err, sizeof(err)) == 0);
			map_agreed_bind(NULL);
		}
		/* after exploration: an exploited arm is never slower than AUTO */
		if (s >= 400 && (!m->drift_at || s < m->drift_at || s >= m->drift_at + 400) &&
		    pair != m->auto_pair && mean[pair] > mean[m->auto_pair])
			res->bad_exploit++;
		if ((s + 1) % K == 0)
			publish();
	}
	for (int i = 0; i < nm; i++) {
		res->converged_at[i] = last_change[i];
		res->final_pair[i] = last_pair[i];
	}
	unload_ranks();
}

static struct model base_model(void)
{
	struct model m;
	memset(&m, 0, sizeof(m));
	m.bytes = 64 << 10;
	/* Tree and Ring with three protocols available; LL128 unavailable on Tree */
	m.mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL)] = 140;
	m.mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)] = 70;
	m.mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL)] = 100;
	m.mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128)] = 95;
	m.mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE)] = 120;
	m.auto_pair = pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL);
	return m;
}

static int arms_available(const struct model *m)
{
	int n = 0;
	for (int i = 0; i < NPAIR; i++)
		n += m->mean_us[i] > 0;
	return n;
}

/* exploration bound: (warm-up + M) rounds over the arms, plus two epochs of agreement lag */
static int bound(const struct model *m, int interleave)
{
	return ((WARMUP + WINDOW) * arms_available(m) + 2 * K) * interleave;
}

static void test_auto_wrong(void)
{
	struct model m = base_model();
	struct run_result res;
	run(&m, 1, 1500, &res);
	CHECK(res.mismatches == 0);
	CHECK(res.unavailable == 0);
	CHECK(res.bad_exploit == 0);
	CHECK(res.final_pair[0] == pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE));
	CHECK(res.converged_at[0] <= bound(&m, 1));
	printf("auto wrong: converged to Tree/Simple at collective %d (bound %d)\n", res.converged_at[0], bound(&m, 1));
	/* after convergence every decision is the best arm */
	int off = 0;
	for (int s = res.converged_at[0]; s < 1500; s++)
		off += decision[0][s] != (NCCLBPF_ALGO_TREE + 1) * 8 + NCCLBPF_PROTO_SIMPLE + 1;
	CHECK(off == 0);
}

static void test_auto_best(void)
{
	struct model m = base_model();
	/* AUTO (Ring/LL) is best; Ring/LL128 only 3 % slower: noise must not make it look 5 %
	 * faster */
	m.mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)] = 130;
	m.mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128)] = 103;
	struct run_result res;
	run(&m, 1, 1500, &res);
	CHECK(res.mismatches == 0 && res.bad_exploit == 0);
	CHECK(res.final_pair[0] == m.auto_pair);
	CHECK(res.converged_at[0] <= bound(&m, 1));
	/* after exploration: NCCL's choice is kept (no forced decision at all) */
	int forced = 0;
	for (int s = bound(&m, 1); s < 1500; s++)
		forced += decision[0][s] != 0;
	CHECK(forced == 0);
	printf("auto best: keeps NCCL's choice from collective %d (%d forced after the bound)\n",
	       res.converged_at[0], forced);
	/* at 64 MiB the gate is 10 %: an arm 2 % faster must not replace AUTO */
	m = base_model();
	m.bytes = 64u << 20;
	m.mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)] = 98;
	m.mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128)] = 104;
	run(&m, 1, 1500, &res);
	CHECK(res.mismatches == 0 && res.bad_exploit == 0 && res.final_pair[0] == m.auto_pair);
	m.mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)] = 80; /* 20 %: replaces AUTO */
	run(&m, 1, 1500, &res);
	CHECK(res.mismatches == 0 && res.final_pair[0] == pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE));
}

static void test_drift(void)
{
	struct model m = base_model();
	m.drift_at = 1500;
	memcpy(m.drift_mean_us, m.mean_us, sizeof(m.mean_us));
	/* halfway the best arm (Tree/Simple) degrades 2.5x; Ring/LL128 becomes the best (15 %) */
	m.drift_mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)] = 175;
	m.drift_mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128)] = 85;
	struct run_result res;
	run(&m, 1, 3000, &res);
	CHECK(res.mismatches == 0 && res.bad_exploit == 0);
	CHECK(res.final_pair[0] == pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128));
	/* drift detection (3 windows of 8) + lag + a new exploration */
	int b = 1500 + 3 * WINDOW + 2 * K + bound(&m, 1);
	CHECK(res.converged_at[0] > 1500 && res.converged_at[0] <= b);
	/* re-exploration happened: arms other than the new best were played after the drift */
	int others = 0;
	for (int s = 1500; s < res.converged_at[0]; s++)
		others += decision[0][s] != (NCCLBPF_ALGO_RING + 1) * 8 + NCCLBPF_PROTO_LL128 + 1;
	CHECK(others >= arms_available(&m));
	printf("drift at 1500: re-explored, converged to Ring/LL128 at %d (bound %d)\n", res.converged_at[0], b);
}

static void test_interleaved(void)
{
	struct model m[3];
	m[0] = base_model();
	m[0].bytes = 4096;
	m[1] = base_model(); /* 64 KiB: Tree/Simple best */
	m[2] = base_model();
	m[2].bytes = 1 << 20;
	m[2].mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)] = 150;
	m[2].mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE)] = 60; /* Ring/Simple best */
	m[0].mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)] = 130;
	m[0].mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL)] = 50;     /* Tree/LL best */
	struct run_result res;
	run(m, 3, 3000, &res);
	CHECK(res.mismatches == 0 && res.unavailable == 0 && res.bad_exploit == 0);
	CHECK(res.final_pair[0] == pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL));
	CHECK(res.final_pair[1] == pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE));
	CHECK(res.final_pair[2] == pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE));
	for (int i = 0; i < 3; i++) {
		CHECK(res.converged_at[i] <= bound(&m[i], 3));
		printf("interleaved band %d: converged at collective %d (bound %d)\n", i, res.converged_at[i],
		       bound(&m[i], 3));
	}
}

/* The .rodata configuration changes behaviour without new logic: with a 50 % gate (set by
 * `ncclbpf config`), the arm 30 % faster than AUTO no longer replaces it. */
static void test_rodata_gate(const char *cli)
{
	char tmpl[] = "/tmp/ncclbpf-bandit-XXXXXX";
	if (!mkdtemp(tmpl)) {
		CHECK(0);
		return;
	}
	char cmd[1024], variant[256];
	snprintf(variant, sizeof(variant), "%s/bandit_gate50.bpf.o", tmpl);
	snprintf(cmd, sizeof(cmd), "%s config %s cfg_gate_small_pct=50 -o %s 2>/dev/null", cli, obj_path, variant);
	CHECK(system(cmd) == 0);
	const char *saved = obj_path;
	obj_path = variant;
	struct model m = base_model();
	struct run_result res;
	run(&m, 1, 600, &res);
	CHECK(res.mismatches == 0 && res.final_pair[0] == m.auto_pair);
	obj_path = saved;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpl);
	CHECK(system(cmd) == 0);
}

/* Without the profiler nothing is measured: after cfg_heartbeat_after (256) collectives
 * of exploring, NCCL's choice is kept. */
static void test_no_profiler(void)
{
	struct model m = base_model();
	struct run_result res;
	no_profiler = 1;
	run(&m, 1, 600, &res);
	no_profiler = 0;
	CHECK(res.mismatches == 0);
	int forced_early = 0, forced_late = 0;
	for (int s = 0; s < 600; s++) {
		if (s < 256)
			forced_early += decision[0][s] != 0;
		else
			forced_late += decision[0][s] != 0;
	}
	CHECK(forced_early > 0 && forced_late == 0);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: %s bandit.bpf.o\n", argv[0]);
		return 2;
	}
	obj_path = argv[1];
	/* BANDIT_SEED=N: another noise sequence (the default is fixed so CI is repeatable) */
	if (getenv("BANDIT_SEED"))
		rng ^= strtoull(getenv("BANDIT_SEED"), NULL, 0) * 0x9e3779b97f4a7c15ull;
	test_auto_wrong();
	test_auto_best();
	test_drift();
	test_interleaved();
	test_no_profiler();
	if (argc > 2)
		test_rodata_gate(argv[2]);
	TEST_DONE();
}

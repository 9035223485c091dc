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
 * within 80 of the band's collectives plus the two-epoch agreement lag (issue 22); after
 * convergence no arm slower than AUTO is exploited, nor one within the gate; unavailable
 * pairs are never chosen; re-exploration after drift and convergence to the new best.
 * With a third argument: the replay of the first GPU sweep's measured distributions
 * (test_replay below): no drift restart inside timed collectives, never significantly
 * slower than NCCL's default, within 5-8 % of the target where the samples separate them.
 * The timeline: a Tree kernel ends at 60 % of its time, its traffic holds the stream until
 * the next kernel starts (the reward, kernel start to kernel start, sees the whole time);
 * the host queues every collective well ahead (api_ns). Training steps with interleaved
 * sizes, gaps and overlap: test_bandit_steps.c.
 *
 *   test_bandit build/policies/bandit.bpf.o [build/ncclbpf [tests/bandit/data/gpu_c1_quantiles.csv]]
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <ncclbpf/ncclbpf.h>
#include <ncclbpf/policy.h>

#include "maps/map.h"
#include "maps/map_internal.h"
#include "plugin/profiler/profiler.h"
#include "runtime/runtime.h"
#include "sample_model.h"
#include "test_util.h"

#define R 4               /* ranks */
#define K 8               /* epoch: BANDIT_EPOCH_LOG2 = 3 in the policy */
/* exploration of one band ends within this many of its collectives (issue 22: screening,
 * the agreement lag, elimination rounds within the per-arm budget) */
#define EXPLORE_BOUND 80
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
static int nr = R; /* ranks in use (the replay runs 2 and 4) */
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

/* ---- what the profiler hands the program: a timeline and KernelCh sampling ----
 * Each rank's collectives complete one after the other: rank r's completion clock advances
 * by the collective's period (the time the model gives it), so the program's reward, the
 * completion-to-completion period, is the model's time. The kernel's own span (gpu_ns) is
 * a fraction of it that depends on the algorithm, as measured on the GPU testbed (Tree's
 * kernels ~60 % of its period, Ring's ~97 %): a policy rewarding gpu_ns ranks them wrong.
 * KernelCh sampling as the profiler does it (profiler_sample.c): per band, the policy's
 * request in "ncclbpf_sample_ctl" (0: every collective, as with profiler programs loaded),
 * plus the collective before a steered sample. A collective without KernelCh reaches the
 * program with flags 0 and host_ns = its enqueue time (3 us), not a latency. */
static double clk[R];        /* per-rank completion clock, us */
static uint32_t seen_band[PROFILER_BANDS];
static int timed_next;       /* the next collective carries KernelCh */
static int untimed_every_other; /* an operator's NCCLBPF_PROFILE_SAMPLE=2-like setting */
static long n_timed, n_untimed;
static struct ncclbpf_map *sample_ctl;

static double span_of(int pair)
{
	return pair / NCCLBPF_NUM_PROTOS == NCCLBPF_ALGO_TREE ? 0.6 : 0.97;
}

static uint32_t ctl_value(uint32_t band)
{
	uint32_t v = 0;
	if (sample_ctl && band < PROFILER_BANDS && ncclbpf_map_lookup(sample_ctl, &band, &v) != 0)
		v = 0;
	return v;
}

static void timeline_reset(void)
{
	memset(clk, 0, sizeof(clk));
	memset(seen_band, 0, sizeof(seen_band));
	timed_next = 1;
	n_timed = n_untimed = 0;
	uint32_t zero = 0;
	for (uint32_t b = 0; sample_ctl && b < PROFILER_BANDS; b++)
		CHECK(ncclbpf_map_update(sample_ctl, &b, &zero, 0) == 0);
}

/* Accounts collective s (band b, carrying KernelCh or not) and decides for s + 1 (band b1,
 * followed by band b2), as profiler_sample_coll does. Returns whether s was timed. */
static int timeline_step(uint64_t s, uint32_t b, uint32_t b1, uint32_t b2)
{
	int timed = timed_next;
	if (untimed_every_other)
		timed = (s % 2) == 0;
	n_timed += timed;
	n_untimed += !timed;
	seen_band[b]++;
	timed_next = sample_model_next(ctl_value(b), seen_band[b], timed, b1, ctl_value(b1),
				       seen_band[b1], b2, ctl_value(b2), seen_band[b2]);
	return timed;
}

/* Fills the timing fields of rank r's profiler context for a collective of `period_us`. */
static void timeline_fill(struct ncclbpf_profiler_ctx *pc, int r, int pair, double period_us, int timed)
{
	double start = clk[r];
	clk[r] += period_us;
	pc->start_ns = (uint64_t)(start * 1000) + 1000000000ull;
	/* the host queued it before the previous one ended (a training loop running ahead, so
	 * no host lateness is excused) - two collectives ahead, as the profiler here sees each
	 * collective before the tuner decides the next but one: a host further ahead in time
	 * than in collectives would tell the bandit its samples arrive later than they do */
	uint64_t ahead = (uint64_t)(2 * period_us * 1000);
	pc->api_ns = pc->start_ns > ahead ? pc->start_ns - ahead : 1;
	if (timed) {
		pc->host_ns = (uint64_t)((clk[r] - start) * 1000);
		pc->gpu_ns = (uint64_t)(period_us * span_of(pair) * 1000);
		pc->flags = NCCLBPF_PROF_F_GPU_TIMED;
		/* the kernel starts at once and ends early for Tree: its traffic holds the stream
		 * until the next kernel starts (the reward: kernel start to kernel start) */
		pc->gpu_start_ns = pc->start_ns;
		pc->gpu_end_ns = pc->start_ns + pc->gpu_ns;
	} else {
		pc->host_ns = 3000;
		pc->gpu_ns = 0;
		pc->flags = 0;
	}
}

static void load_ranks(void)
{
	char err[2048];
	for (int r = 0; r < nr; r++) {
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
	/* pinned: one map for the whole process, as in a real process */
	sample_ctl = ncclbpf_object_find_map(ranks[0].obj, "ncclbpf_sample_ctl");
	CHECK(sample_ctl != NULL);
	timeline_reset();
}

static void unload_ranks(void)
{
	for (int r = 0; r < nr; r++) {
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
			for (int r = 0; r < nr; r++) {
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

static void fill_ctx(struct ncclbpf_tuner_ctx *ctx, const struct model *m, uint64_t seq, uint64_t comm_seq,
		     uint64_t band_seq)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->band_seq = band_seq;
	ctx->comm_id = 0x1234;
	ctx->n_bytes = m->bytes;
	ctx->seq = seq;
	ctx->coll_type = NCCLBPF_COLL_ALLREDUCE;
	ctx->n_ranks = (uint32_t)nr;
	ctx->n_nodes = (uint32_t)nr;
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
	int timed_late, late; /* collectives from 1100 on: carrying KernelCh, all */
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
		for (int r = 0; r < nr; r++) {
			struct ncclbpf_tuner_ctx ctx;
			fill_ctx(&ctx, m, seq, (uint64_t)s, (uint64_t)(s / nm));
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
		for (int r = 1; r < nr; r++)
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
		int timed = timeline_step(seq - 1, ncclbpf_size_bucket(m->bytes),
					  ncclbpf_size_bucket(models[(s + 1) % nm].bytes),
					  ncclbpf_size_bucket(models[(s + 2) % nm].bytes));
		if (s >= 1100)
			res->timed_late += timed, res->late++;
		for (int r = 0; r < nr && !no_profiler; r++) {
			struct ncclbpf_profiler_ctx pc;
			memset(&pc, 0, sizeof(pc));
			pc.comm_id = 0x1234;
			pc.seq = seq - 1;
			pc.comm_seq = seq - 1;
			pc.band_seq = (uint64_t)(s / nm);
			pc.n_bytes = m->bytes;
			timeline_fill(&pc, r, pair, t * (1 + 0.02 * uniform() + 0.01 * r), timed);
			pc.coll_type = NCCLBPF_COLL_ALLREDUCE;
			pc.algo = pair / NCCLBPF_NUM_PROTOS;
			pc.proto = pair % NCCLBPF_NUM_PROTOS;
			pc.rank = (uint32_t)r;
			pc.n_ranks = (uint32_t)nr;
			pc.n_nodes = (uint32_t)nr;
			pc.size_bucket = ncclbpf_size_bucket(m->bytes);
			map_agreed_bind(&ranks[r].wr);
			uint64_t ret = 0;
			char err[256];
			CHECK(ncclbpf_program_run(ranks[r].prof, &pc, sizeof(pc), &ret, err, sizeof(err)) == 0);
			map_agreed_bind(NULL);
		}
		/* after exploration: an exploited arm is never slower than AUTO */
		if (s >= 1100 && (!m->drift_at || s < m->drift_at || s >= m->drift_at + 400) &&
		    pair != m->auto_pair && mean[pair] > mean[m->auto_pair])
			res->bad_exploit++;
		if ((s + 1) % K == 0)
			publish();
		if (getenv("BANDIT_DEBUG_HB") && s % 64 == 0) {
			uint64_t v;
			memcpy(&v, pub_cnt + (size_t)120 * map_array_stride(ranks[0].cnt), 8);
			fprintf(stderr, "s=%d hb=%llu timed=%ld untimed=%ld\n", s, (unsigned long long)v, n_timed, n_untimed);
		}
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

/* exploration bound, in the communicator's collectives: EXPLORE_BOUND of the band's, times
 * the bands interleaved, plus two epochs of agreement lag */
static int bound(const struct model *m, int interleave)
{
	(void)m;
	return (EXPLORE_BOUND + 2 * K) * interleave;
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
	/* exploited: KernelCh only in the drift check's bursts (9 of every 64) */
	double frac = res.late ? (double)res.timed_late / res.late : 1;
	printf("auto wrong: %.1f %% of the collectives after 1100 carried KernelCh\n", 100 * frac);
	CHECK(frac > 0.08 && frac < 0.25);
}

/* GPU testbed, 1 MiB on 4 nodes (docs/results.md 9.4): Tree/Simple's kernels are much
 * shorter than Ring/Simple's, yet one Tree/Simple collective after another takes longer.
 * Rewarding the kernel span picks Tree/Simple; the completion period keeps NCCL's Ring/Simple. */
static void test_span_misleads(void)
{
	struct model m;
	memset(&m, 0, sizeof(m));
	m.bytes = 1 << 20;
	m.mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL)] = 2600;
	m.mean_us[pair_of(NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_SIMPLE)] = 1050;
	m.mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL)] = 2170;
	m.mean_us[pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE)] = 970;
	m.auto_pair = pair_of(NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE);
	struct run_result res;
	run(&m, 1, 1500, &res);
	CHECK(res.mismatches == 0 && res.unavailable == 0 && res.bad_exploit == 0);
	CHECK(res.final_pair[0] == m.auto_pair);
	printf("span misleads: keeps NCCL's Ring/Simple (final pair %d, converged at %d)\n", res.final_pair[0],
	       res.converged_at[0]);
}

/* Collectives without KernelCh (here every other one, as NCCLBPF_PROFILE_SAMPLE=2 would
 * give) carry no completion time: the policy must not learn from them. No two consecutive
 * collectives are timed, so no period is ever measured: after cfg_heartbeat_after
 * collectives NCCL's choice is kept. */
static void test_untimed_ignored(void)
{
	struct model m = base_model();
	struct run_result res;
	untimed_every_other = 1;
	run(&m, 1, 600, &res);
	untimed_every_other = 0;
	CHECK(res.mismatches == 0);
	int forced_late = 0;
	for (int s = 256; s < 600; s++)
		forced_late += decision[0][s] != 0;
	CHECK(forced_late == 0);
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
	/* drift detection (a sampling burst every 64 collectives finds the first slow window,
	 * then every collective is timed for the other 3 windows of 8) + lag + a new exploration */
	int b = 1500 + 2 * 64 + 4 * 8 + 2 * K + bound(&m, 1);
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


/* ---- replay of the first GPU sweep (tests/bandit/data/gpu_c1_quantiles.csv) ----
 * Every arm's latency is drawn from the empirical distribution measured on the GPU testbed
 * (16 quantiles per node count, size and forced pair; "default" is NCCL's own choice), and
 * the bandit runs as it did there: sizes 4 KiB..64 MiB x4 in order on one communicator,
 * per size `warm` untimed collectives then min(100, max(8, 128 MiB / size)) timed ones. */
#define RP_SIZES 8
#define RP_CFG 7 /* default, then Tree/LL, LL128, Simple, Ring/LL, LL128, Simple */
#define RP_NQ 16
#define RP_MAX_T 100
struct replay_data {
	double q[2][RP_SIZES][RP_CFG][RP_NQ]; /* [2 nodes, 4 nodes] */
	int have[2][RP_SIZES][RP_CFG];
	/* the final sweep's testbed: NCCL 2.28.9 offered no LL128 pair to the tuner (the decision
	 * logs never show one; forced configs enable it with NCCL_PROTO) */
	int no_ll128;
	/* Stagger model of the waited-for warm-up (final sweep, docs/results.md 9.2): a Tree
	 * collective's ranks finish at different times; the rank that finishes first launches
	 * the next collective first and its kernel span includes waiting for the others. So the
	 * stagger of collective i-1 is charged to collective i: rank r sees
	 *   lat_i * (1 - s(a_i)) + s(a_{i-1}) * lat_{i-1} * (n - 1 - r) / (n - 1)
	 * with s = stagger_small (Tree, up to 16 KiB), stagger (Tree, larger), 0 (Ring).
	 * Back to back, an arm pays its own stagger (lat_i as measured, timed). 0: off. */
	double stagger_small, stagger;
};

static int replay_load(const char *path, struct replay_data *d)
{
	static const char *names[RP_CFG] = {"default", "Tree-LL", "Tree-LL128", "Tree-Simple",
					    "Ring-LL", "Ring-LL128", "Ring-Simple"};
	memset(d, 0, sizeof(*d));
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	char line[1024];
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		int nodes;
		unsigned long long bytes;
		char cfg[32];
		int off = 0;
		if (sscanf(line, "%d,%llu,%31[^,],%n", &nodes, &bytes, cfg, &off) != 3 || off == 0)
			continue;
		int ni = nodes == 2 ? 0 : nodes == 4 ? 1 : -1, si = -1, ci = -1;
		for (int i = 0; i < RP_SIZES; i++)
			if (bytes == 4096ull << (2 * i))
				si = i;
		for (int i = 0; i < RP_CFG; i++)
			if (!strcmp(cfg, names[i]))
				ci = i;
		if (ni < 0 || si < 0 || ci < 0)
			continue;
		char *p = line + off;
		int k = 0;
		while (k < RP_NQ && *p) {
			char *e;
			d->q[ni][si][ci][k] = strtod(p, &e);
			if (e == p)
				break;
			k++;
			p = *e == ',' ? e + 1 : e;
		}
		d->have[ni][si][ci] = k == RP_NQ;
	}
	fclose(f);
	return 0;
}

/* a draw from the empirical distribution: linear between the quantiles, flat beyond */
static double replay_draw(const double *q)
{
	double h = uniform() * RP_NQ - 0.5;
	if (h <= 0)
		return q[0];
	if (h >= RP_NQ - 1)
		return q[RP_NQ - 1];
	int i = (int)h;
	return q[i] + (h - i) * (q[i + 1] - q[i]);
}

static double replay_median(const double *q)
{
	return (q[RP_NQ / 2 - 1] + q[RP_NQ / 2]) / 2;
}

/* one-sided Mann-Whitney U, normal approximation with tie correction: p that x is
 * stochastically larger (slower) than y */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}
static double mw_p_greater(const double *x, int nx, const double *y, int ny)
{
	int n = nx + ny;
	double (*v)[2] = malloc(sizeof(*v) * (size_t)n);
	for (int i = 0; i < nx; i++)
		v[i][0] = x[i], v[i][1] = 0;
	for (int i = 0; i < ny; i++)
		v[nx + i][0] = y[i], v[nx + i][1] = 1;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	double rx = 0, ties = 0;
	for (int i = 0; i < n;) {
		int j = i;
		while (j < n && v[j][0] == v[i][0])
			j++;
		double rank = (i + j + 1) / 2.0, t = j - i;
		ties += t * t * t - t;
		for (int k = i; k < j; k++)
			if (v[k][1] == 0)
				rx += rank;
		i = j;
	}
	free(v);
	double u = rx - nx * (nx + 1) / 2.0, mu = nx * (double)ny / 2;
	double sd = sqrt(nx * (double)ny / 12 * ((n + 1) - ties / ((double)n * (n - 1))));
	return sd > 0 ? 0.5 * erfc((u - mu - 0.5) / sd / sqrt(2)) : 0.5;
}

static double warmup_bytes; /* 0: a flat warm-up */
static int min_warmup;

/* the harness's gb_warmup_for: --warmup capped at --warmup-bytes / size, >= --min-warmup */
static int replay_warmup(int warm, size_t bytes)
{
	if (warmup_bytes <= 0)
		return warm;
	double cap = warmup_bytes / (double)bytes;
	int n = cap < warm ? (int)cap : warm;
	n = n < min_warmup ? min_warmup : n;
	return n > warm ? warm : n;
}

struct replay_stats {
	int off_arm;   /* timed collectives not on the size's final arm */
	int exploring; /* timed collectives while some arm was still short of M samples */
	int restarts;  /* drift restarts (rank 0's counts of a band reset) */
	int restarts_timed;
};

/* Runs one repetition for `nodes`; the timed latencies of every size go to t[size][..]. */
static void replay_rep(const struct replay_data *d, int ni, int warm, double timed_scale,
		       double t[RP_SIZES][RP_MAX_T], int n_t[RP_SIZES], struct replay_stats *st)
{
	nr = ni ? 4 : 2;
	load_ranks();
	uint64_t s = 0;
	double prev_stagger = 0; /* s(a_{i-1}) * lat_{i-1} */
	size_t cstride = map_array_stride(ranks[0].cnt);
	for (int si = 0; si < RP_SIZES; si++) {
		size_t bytes = 4096ull << (2 * si);
		struct model m;
		memset(&m, 0, sizeof(m));
		m.bytes = bytes;
		/* the arms NCCL offers (Tree/Ring x LL/LL128/Simple); AUTO: the pair whose median
		 * is nearest to NCCL's default (its cost table's pick on this testbed) */
		double dm = replay_median(d->q[ni][si][0]), best = 1e300;
		for (int c = 1; c < RP_CFG; c++) {
			if (d->no_ll128 && (c - 1) % 3 == NCCLBPF_PROTO_LL128)
				continue;
			int pair = pair_of(c <= 3 ? NCCLBPF_ALGO_TREE : NCCLBPF_ALGO_RING, (c - 1) % 3);
			m.mean_us[pair] = replay_median(d->q[ni][si][c]);
			if (fabs(m.mean_us[pair] - dm) < best)
				best = fabs(m.mean_us[pair] - dm), m.auto_pair = pair;
		}
		int timed = (int)((128u << 20) / bytes);
		timed = timed < 8 ? 8 : timed > RP_MAX_T ? RP_MAX_T : timed;
		n_t[si] = timed;
		int band = NCCLBPF_COLL_ALLREDUCE * 24 + (int)ncclbpf_size_bucket(bytes) - 10;
		uint64_t prev_sum = 0;
		int pairs[RP_MAX_T], w = replay_warmup(warm, bytes);
		double stag = si <= 1 ? d->stagger_small : d->stagger;
		for (int i = 0; i < w + timed; i++, s++) {
			int pair = -1, keep = 0;
			for (int r = 0; r < nr; r++) {
				struct ncclbpf_tuner_ctx ctx;
				fill_ctx(&ctx, &m, s, s, (uint64_t)i);
				map_agreed_bind(&ranks[r].rd);
				uint64_t ret = 0;
				char err[256];
				CHECK(ncclbpf_program_run(ranks[r].tuner, &ctx, sizeof(ctx), &ret, err, sizeof(err)) == 0);
				map_agreed_bind(NULL);
				int p = resolve(&ctx, m.auto_pair);
				if (r == 0) {
					pair = p;
					keep = ctx.algo < 0;
				}
				CHECK(p == pair);
			}
			/* NCCL's own choice runs as measured for "default"; a forced pair as forced */
			int cfg = keep ? 0 : 1 + (pair / NCCLBPF_NUM_PROTOS == NCCLBPF_ALGO_RING ? 3 : 0) +
						  pair % NCCLBPF_NUM_PROTOS;
			double lat = replay_draw(d->q[ni][si][cfg]);
			double own = pair / NCCLBPF_NUM_PROTOS == NCCLBPF_ALGO_TREE ? stag : 0;
			int is_timed = i >= w;
			if (getenv("BANDIT_REPLAY_DEBUG") && (is_timed || atoi(getenv("BANDIT_REPLAY_DEBUG")) > 1))
				fprintf(stderr, "%zu %d %d %d\n", bytes, i, pair, keep);
			if (is_timed) {
				t[si][i - w] = lat;
				pairs[i - w] = pair;
			}
			uint32_t bb = ncclbpf_size_bucket(bytes);
			uint32_t bn1 = i + 1 < w + timed ? bb : bb + 2, bn2 = i + 2 < w + timed ? bb : bb + 2;
			int ktimed = timeline_step(s, bb, bn1, bn2);
			for (int r = 0; r < nr; r++) {
				struct ncclbpf_profiler_ctx pc;
				memset(&pc, 0, sizeof(pc));
				pc.comm_id = 0x1234;
				pc.seq = s;
				pc.comm_seq = s;
				pc.band_seq = (uint64_t)i;
				pc.n_bytes = bytes;
				/* what the profiler sees: the slowest rank's time, less on the others;
				 * timed collectives are queued back to back (timed_scale) */
				double view = lat * (1 - own) + prev_stagger * (nr - 1 - r) / (nr - 1);
				/* the period is the measured time; the kernel span (gpu_ns) the stagger
				 * model's view of it, which the policy must not use */
				timeline_fill(&pc, r, pair, lat * (is_timed ? timed_scale : 1) * (1 - 0.03 * uniform() * r),
					      ktimed);
				if (ktimed)
					pc.gpu_ns = (uint64_t)(view * 1000 * (is_timed ? timed_scale : 1));
				pc.coll_type = NCCLBPF_COLL_ALLREDUCE;
				pc.algo = pair / NCCLBPF_NUM_PROTOS;
				pc.proto = pair % NCCLBPF_NUM_PROTOS;
				pc.rank = (uint32_t)r;
				pc.n_ranks = (uint32_t)nr;
				pc.n_nodes = (uint32_t)nr;
				pc.size_bucket = ncclbpf_size_bucket(bytes);
				map_agreed_bind(&ranks[r].wr);
				uint64_t ret = 0;
				char err[256];
				CHECK(ncclbpf_program_run(ranks[r].prof, &pc, sizeof(pc), &ret, err, sizeof(err)) == 0);
				map_agreed_bind(NULL);
			}
			if (getenv("BANDIT_REPLAY_STATS") && bytes == strtoull(getenv("BANDIT_REPLAY_STATS"), NULL, 0) &&
			    i >= 8 && i < 28) {
				const uint64_t *st = (const uint64_t *)(pub_stat + (size_t)band * map_array_stride(ranks[0].stat));
				const uint64_t *cn = (const uint64_t *)(pub_cnt + (size_t)band * map_array_stride(ranks[0].cnt));
				fprintf(stderr, "i %d pair %d lat %.0f:", i, pair, lat);
				for (int a = 0; a < 8; a++)
					if (cn[a])
						fprintf(stderr, " a%d n%llu %.0f sd%.0f", a, (unsigned long long)cn[a] - 1, st[a] / 1e3, st[8 + a] / 1e3);
				fprintf(stderr, "\n");
			}
			uint64_t sum = 0, v;
			for (int a = 0; a < 8; a++) {
				memcpy(&v, ranks[0].contrib_cnt + (size_t)band * cstride + 8 * (size_t)a, 8);
				sum += v;
			}
			if (sum < prev_sum && sum == 8) {
				st->restarts++;
				st->restarts_timed += is_timed;
			}
			prev_sum = sum;
			prev_stagger = lat * own;
			if ((s + 1) % K == 0)
				publish();
		}
		for (int i = 0; i < timed; i++)
			st->off_arm += pairs[i] != pairs[timed - 1];
	}
	unload_ranks();
	nr = R;
}

/* BANDIT_REPLAY_REPS, BANDIT_REPLAY_WARMUP, BANDIT_REPLAY_WARMUP_BYTES (0: flat),
 * BANDIT_REPLAY_MIN_WARMUP, BANDIT_REPLAY_SCALE override the defaults (for studies;
 * BANDIT_REPLAY_STATS=BYTES prints that size's published statistics;
 * BANDIT_REPLAY_DEBUG=1 prints every timed decision, 2 every decision); the CTest run uses 5 repetitions, 200 warm-up collectives, scales 1 and
 * 0.75 (queued timed collectives that the profiler sees 25 % faster than waited ones). */
static void test_replay(const char *data, const char *which, int no_ll128, double stagger_small,
			double stagger, double tol)
{
	static struct replay_data d;
	if (replay_load(data, &d) != 0) {
		fprintf(stderr, "replay: cannot read %s\n", data);
		CHECK(0);
		return;
	}
	d.no_ll128 = no_ll128;
	d.stagger_small = stagger_small;
	d.stagger = stagger;
	int reps = getenv("BANDIT_REPLAY_REPS") ? atoi(getenv("BANDIT_REPLAY_REPS")) : 5;
	/* emulate-nodes.sh's defaults: --policy-warmup 240 --policy-warmup-bytes 640M
	 * --policy-min-warmup 112 (240 up to 1 MiB, 160 at 4 MiB, 112 from 16 MiB) */
	int warm = getenv("BANDIT_REPLAY_WARMUP") ? atoi(getenv("BANDIT_REPLAY_WARMUP")) : 240;
	warmup_bytes = getenv("BANDIT_REPLAY_WARMUP_BYTES") ? strtod(getenv("BANDIT_REPLAY_WARMUP_BYTES"), NULL)
							     : 640.0 * (1 << 20);
	min_warmup = getenv("BANDIT_REPLAY_MIN_WARMUP") ? atoi(getenv("BANDIT_REPLAY_MIN_WARMUP")) : 112;
	double scales[2] = {1.0, 0.75};
	int n_scales = 2;
	if (getenv("BANDIT_REPLAY_SCALE"))
		scales[0] = atof(getenv("BANDIT_REPLAY_SCALE")), n_scales = 1;
	reps = reps < 1 ? 1 : reps > 20 ? 20 : reps;
	static double all[RP_SIZES][20 * RP_MAX_T], dflt[20 * RP_MAX_T], bestv[20 * RP_MAX_T];
	for (int sc = 0; sc < n_scales; sc++)
		for (int ni = 0; ni < 2; ni++) {
			struct replay_stats st = {0};
			int n_all[RP_SIZES] = {0};
			for (int rep = 0; rep < reps; rep++) {
				double t[RP_SIZES][RP_MAX_T];
				int n_t[RP_SIZES];
				replay_rep(&d, ni, warm, scales[sc], t, n_t, &st);
				for (int si = 0; si < RP_SIZES; si++)
					for (int i = 0; i < n_t[si]; i++)
						all[si][n_all[si]++] = t[si][i];
			}
			printf("%s replay, %d nodes, warm-up %d, profiler scale on timed %.2f: %d timed collectives "
			       "off the final arm, %d drift restarts (%d in timed collectives)\n",
			       which, ni ? 4 : 2, warm, scales[sc], st.off_arm, st.restarts, st.restarts_timed);
			int slow_default = 0, far_from_best = 0;
			for (int si = 0; si < RP_SIZES; si++) {
				int n = n_all[si], bc = 1;
				for (int c = 2; c < RP_CFG; c++)
					if (!(d.no_ll128 && (c - 1) % 3 == NCCLBPF_PROTO_LL128) &&
					    replay_median(d.q[ni][si][c]) < replay_median(d.q[ni][si][bc]))
						bc = c;
				for (int i = 0; i < n; i++) {
					dflt[i] = replay_draw(d.q[ni][si][0]);
					bestv[i] = replay_draw(d.q[ni][si][bc]);
				}
				double p_def = mw_p_greater(all[si], n, dflt, n);
				double p_best = mw_p_greater(all[si], n, bestv, n);
				/* the target: the best pair where it beats NCCL's choice by more than
				 * the policy's safety gate (5 %, 10 % from 64 MiB) plus 3 % (what 32
				 * samples per arm resolve under the testbed's +-20-30 % noise), else
				 * NCCL's choice */
				double gate = (si == RP_SIZES - 1 ? 0.10 : 0.05) + 0.03;
				int use_best = replay_median(d.q[ni][si][bc]) < (1 - gate) * replay_median(d.q[ni][si][0]);
				double p_ref = use_best ? p_best : p_def;
				qsort(all[si], (size_t)n, sizeof(double), cmp_double);
				double med = (all[si][(n - 1) / 2] + all[si][n / 2]) / 2;
				double mb = replay_median(d.q[ni][si][bc]), md = replay_median(d.q[ni][si][0]);
				double ref = use_best ? mb : md;
				/* slower than the default: separably (p < 0.01) and by more than the
				 * tolerance the target is held to - a 1-2 % difference is below what the
				 * samples resolve (above) and below the safety gate: main's bandit of
				 * 2ea9e02 "failed" 1-2 % at 1 and 16 MiB with BANDIT_SEED 2, 3 and 5, and any
				 * change of the screening redraws every size's noise */
				int sd = p_def < 0.01 && med > (1 + tol) * md, fb = med > (1 + tol) * ref && p_ref < 0.01;
				printf("  %8zu B: bandit median %9.1f us, best pair %9.1f (%.3f, p slower %.2g), "
				       "default %9.1f (%.3f, p slower %.2g)%s%s\n",
				       (size_t)4096 << (2 * si), med, mb, med / mb, p_best, md, med / md, p_def,
				       sd ? " SLOWER THAN DEFAULT" : "", fb ? " FAR FROM TARGET" : "");
				slow_default += sd;
				/* within 3 % of the target, or not separably slower */
				far_from_best += fb;
			}
			CHECK(slow_default == 0);
			CHECK(far_from_best == 0);
			CHECK(st.restarts_timed == 0);
		}
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
	test_span_misleads();
	test_untimed_ignored();
	test_auto_best();
	test_drift();
	test_interleaved();
	test_no_profiler();
	if (argc > 2)
		test_rodata_gate(argv[2]);
	/* sweep 1 ran on the same testbed: NCCL offered no LL128 there either (the final sweep's
	 * decision logs show it) */
	/* within 8 % of the target: at 16 KiB on 4 nodes four offered pairs lie within 9 % under
	 * +-20-30 % noise, which the 12 samples per arm of the 80-collective budget (issue 22)
	 * do not order */
	if (argc > 3)
		test_replay(argv[3], "GPU sweep 1", 1, 0, 0, 0.08);
	/* the final sweep (gpu-c2): no LL128 offered, Tree's stagger charged to the next
	 * collective in the waited-for warm-up (fitted to its decision logs, results.md 9.2) */
	if (argc > 4) {
		double ss = getenv("BANDIT_REPLAY_STAGGER_SMALL") ? atof(getenv("BANDIT_REPLAY_STAGGER_SMALL")) : 0.9;
		double sl = getenv("BANDIT_REPLAY_STAGGER") ? atof(getenv("BANDIT_REPLAY_STAGGER")) : 0.5;
		/* within 5 % of the target: several sizes have offered pairs 4-5 % apart with
		 * +-20 % noise, which 32 samples per arm do not always order */
		test_replay(argv[4], "GPU sweep 2", 1, ss, sl, 0.05);
	}
	TEST_DONE();
}

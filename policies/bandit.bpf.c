// SPDX-License-Identifier: BSD-3-Clause
/* bandit: online algorithm/protocol selection that learns from measured latencies.
 *
 * One object, two programs (load it as NCCL's tuner *and* profiler plugin):
 *  - bandit_observe (profiler): per rank, attributes every completed collective to the arm
 *    NCCL ran (its algorithm/protocol pair) and to its band, computes what it cost the job
 *    (the reward, below), keeps per-arm sample windows and writes each arm's robust mean,
 *    dispersion and sample count into agreed maps (this rank's contribution); it steers the
 *    profiler's KernelCh sampling (ncclbpf_sample_ctl) to the collectives it needs;
 *  - bandit_pick (tuner): reads the *published* view of those maps - the same bytes on every
 *    rank at the same collective - and decides from it and rank-invariant inputs only.
 *
 * Bands: per (communicator, collective type, size band = power of two of the bytes). Each
 * band learns on its own clock, ctx->band_seq (the band's collectives so far on this
 * communicator, the same on every rank), so interleaved sizes and types do not slow each
 * other down.
 *
 * Reward (docs/tuning.md): per rank, a collective's hold on its stream - from its kernel's
 * start to the next kernel's start, less the time the host had not yet issued the next one.
 * On the GPU testbed a collective's network traffic outlasts its kernel (a Tree kernel ends
 * 35-45 % early) and holds the next kernel back: completion-to-completion periods, or
 * anything that subtracts the wait before a kernel, charge that tail to the next collective,
 * which in a mixed step belongs to another band (docs/results.md 14). Queued back to back,
 * summed over a step, the holds are the step time. Host lateness is excused only as far as
 * every arm of the band shows it: what one arm brings more is its cost (a host that waits
 * for every collective resumes after Tree's traffic tail; GPU call g4). Reduced over ranks
 * with MAX (a collective takes as long as its slowest rank). cfg_reward 1: the
 * completion-to-completion period instead.
 *
 * Exploration, per band (bandit_pick):
 *  1. pruning: arms NCCL's own cost table puts more than 2^cfg_prune_log2 times above its
 *     choice (AUTO) are never tried (LL at 16 MiB: 4x slower, one try costs a whole step);
 *  2. screening: each candidate arm plays one block of cfg_screen + 1 collectives of the
 *     band (the first sample after a switch or of a new arm is dropped) - cfg_screen_far + 1
 *     for an arm NCCL's cost table puts 2^cfg_screen_far_log2 times above AUTO - in an order
 *     rotated per band so that neighbouring bands do not switch in lockstep; AUTO's block
 *     keeps NCCL's choice. Until the screening is published (every arm has its samples,
 *     or the band's published progress covers the screening: a lost sample does not stall
 *     it), NCCL's choice is kept;
 *  3. elimination: an arm whose lower confidence bound (mean - z sd / sqrt(n), agreed
 *     statistics) lies above the best arm's upper bound is out; the survivors play blocks of
 *     cfg_block in a rotating round robin until each holds its budget of samples
 *     (cfg_budget_*; the round robin's turns decided but not yet published are counted
 *     in, from the band progress the profilers publish, and NCCL's choice is kept until
 *     their samples are in), so exploration ends within a bounded number of the band's
 *     collectives;
 *  4. exploitation: the survivor with the lowest mean; it replaces AUTO only when it is
 *     faster than AUTO's mean by more than the safety gate (cfg_gate_small_pct /
 *     cfg_gate_large_pct), and NCCL's choice stays while AUTO has no sample.
 * No random numbers (they would differ between ranks): every choice is a function of
 * band_seq, the cost table and the published maps.
 *
 * Agreement (docs/agreement.md): bandit_stat is reduced with MAX (the slowest rank's mean
 * and dispersion), bandit_count with MIN (one rank that restarts its measurements restarts
 * exploration for all). Versions are published every 2^BANDIT_EPOCH_LOG2 collectives and
 * activate at the same collective on every rank.
 *
 * Drift: once an arm holds its budget its statistic is frozen; later windows of the
 * exploited arm (sampling bursts) are compared with it, and after cfg_drift_windows windows
 * in a row slower by more than cfg_drift_pct the rank restarts the band: counts to zero,
 * a new exploration base band_seq cfg_restart_delay ahead (so that every rank sees the
 * restart before the new screening starts), the published MIN follows.
 *
 * Without measurements (no profiler plugin, no agreement) nothing is published; after
 * cfg_heartbeat_after collectives the tuner keeps NCCL's choice.
 *
 * Configuration is .rodata (`const volatile`): `ncclbpf config` changes it in a built object.
 */
#include <ncclbpf/policy.h>

#define BANDIT_MAX_ARMS 8
#define BANDIT_WINDOW 8         /* samples per window (ring of the latest ones) */
_Static_assert(BANDIT_WINDOW >= BANDIT_MAX_ARMS, "the band record keeps one lat[] per arm");
#define BANDIT_BUCKETS 24       /* size bands per collective from cfg_bucket_min */
#define BANDIT_BANDS (NCCLBPF_NUM_COLLS * BANDIT_BUCKETS)
#define BANDIT_EPOCH_LOG2 3     /* agreed-map epoch: 8 collectives */
/* a run of the exploited arm this long, then another arm: the tuner is re-exploring */
#define BANDIT_RESTART_RUN ((2 << BANDIT_EPOCH_LOG2) + 2 * BANDIT_WINDOW)

/* ---- configuration (.rodata) ---- */
const volatile __u32 cfg_n_arms = 8;
const volatile __s32 cfg_arm_algo[BANDIT_MAX_ARMS] = {
	NCCLBPF_ALGO_TREE, NCCLBPF_ALGO_TREE, NCCLBPF_ALGO_TREE, NCCLBPF_ALGO_RING,
	NCCLBPF_ALGO_RING, NCCLBPF_ALGO_RING, NCCLBPF_ALGO_PAT,  NCCLBPF_ALGO_NVLS,
};
const volatile __s32 cfg_arm_proto[BANDIT_MAX_ARMS] = {
	NCCLBPF_PROTO_LL,     NCCLBPF_PROTO_LL128, NCCLBPF_PROTO_SIMPLE, NCCLBPF_PROTO_LL,
	NCCLBPF_PROTO_LL128,  NCCLBPF_PROTO_SIMPLE, NCCLBPF_PROTO_SIMPLE, NCCLBPF_PROTO_SIMPLE,
};
const volatile __u32 cfg_coll_mask = 0x1f;       /* bit per NCCLBPF_COLL_* */
const volatile __u32 cfg_min_nodes = 1;          /* leave communicators below this to NCCL */
const volatile __u32 cfg_bucket_min = 10;        /* bands 2^10 (1 KiB) .. 2^33 */
/* Arms whose NCCL cost estimate is above 2^cfg_prune_log2 times AUTO's are not explored
 * (the float bit patterns: + log2 to the exponent is x 2^log2). 0: explore every arm. */
const volatile __u32 cfg_prune_log2 = 2;
const volatile __u32 cfg_screen = 3;             /* valid samples per arm in the screening (the
						  * robust mean of 3 survives one outlier) */
/* ... but only cfg_screen_far for arms NCCL's cost table puts above 2^cfg_screen_far_log2
 * times AUTO's (0: none): one such screening turn on the testbed cost a whole step (GPU calls
 * g17-g20: Ring/LL at 1-4 MiB, 4 collectives, +3.6 ms each), and a far worse arm is out on
 * its first sample (the bounds are wide, the gap wider); one that is not gets its samples
 * in the round robin like any survivor */
const volatile __u32 cfg_screen_far = 1;
const volatile __u32 cfg_screen_far_log2 = 1;
/* LL arms whatever NCCL's estimate: screened with cfg_screen_far samples from
 * cfg_ll_far_from on, never tried from cfg_ll_prune_from on (0: no such rule). LL moves 8-byte
 * lines of 4 data bytes and 4 flag bytes - at most half the wire's bandwidth - and polls its
 * flags, which a compute kernel beside it slows down: on the testbed Ring/LL ran 2-4x Ring/
 * Simple at 1-16 MiB alone and ~8x beside compute, while NCCL's cost table put it under 2x
 * there (GPU calls g17-g22); one screening turn of it cost a whole step. At 256 KiB it was
 * 1.6-2x (an LL arm that is in the race still gets its samples in the round robin). At 1 MiB
 * it is screened, not pruned: without it the CPU model's overlap step ends one seed's 1 MiB
 * band on Tree/Simple, 7 % slower (the reward's ranking of the two Simple arms there is
 * within its noise). */
const volatile __u64 cfg_ll_far_from = 256ull << 10;
const volatile __u64 cfg_ll_prune_from = 2ull << 20;
const volatile __u32 cfg_block = 4;              /* collectives per turn after it */
/* per-arm sample budget of the survivors: small collectives are cheap and noisy, large ones
 * costly and steadier */
const volatile __u32 cfg_budget_small = 12;      /* below cfg_budget_small_below */
const volatile __u64 cfg_budget_small_below = 1ull << 20;
const volatile __u32 cfg_budget = 10;
const volatile __u32 cfg_budget_large = 6;       /* from cfg_budget_large_from */
const volatile __u64 cfg_budget_large_from = 16ull << 20;
/* An arm's mean over the ranks: the slowest rank's (MAX) + cfg_rank_mix % of the way down
 * to the fastest rank's (MIN). A rank that finished the previous collective early starts
 * this one early and waits in it: MAX charges the previous collective's rank stagger to this
 * one, MIN misses this collective's own stagger (docs/tuning.md). */
const volatile __u32 cfg_rank_mix = 0;
const volatile __u32 cfg_z_pct = 200;            /* confidence bounds: z = 2.00 */
const volatile __u32 cfg_sd_prior_pct = 15;      /* assumed sd of a sample, up to 8 samples */
const volatile __u32 cfg_sd_floor_pct = 3;       /* never assume less */
const volatile __u32 cfg_gate_small_pct = 5;     /* safety gate below cfg_large_from */
const volatile __u32 cfg_gate_large_pct = 10;    /* and from there on */
const volatile __u64 cfg_large_from = 64ull << 20;
const volatile __u32 cfg_warmup = 1;             /* samples per arm dropped after a (re)start */
const volatile __u32 cfg_drop_after_switch = 0;  /* drop a sample after another arm of the band */
/* 0: a collective's hold on the stream, its kernel's start to the next kernel's start (the
 * reward above); 1: its completion-to-completion period */
const volatile __u32 cfg_reward = 0;
const volatile __u32 cfg_drift_pct = 50;         /* exploited arm slower than its statistic by
						  * this (testbed windows vary by up to ~30 %) */
const volatile __u32 cfg_drift_windows = 4;      /* ... for this many windows in a row */
const volatile __u64 cfg_restart_delay = 32;     /* band collectives from a restart to the new
						  * screening (> the agreement lag) */
const volatile __u64 cfg_start_after = 0;        /* band collectives left to NCCL before the
						  * first screening */
/* KernelCh costs NCCL about 1 us per small collective: every collective while the band
 * explores, then the first cfg_sample_burst of every cfg_sample_every (one window plus the
 * collective before it), and bands the bandit leaves to NCCL as cfg_sample_other */
const volatile __u32 cfg_sample_every = 64;
const volatile __u32 cfg_sample_burst = BANDIT_WINDOW + 1;
const volatile __u32 cfg_sample_other = NCCLBPF_SAMPLE_BURST(256, 1);
const volatile __u64 cfg_heartbeat_after = 256;  /* nothing published after this many
						  * collectives: keep NCCL's choice */

/* ---- agreed maps: this rank's contribution (profiler), the published view (tuner) ---- */
struct bandit_stat {
	__u64 mean[BANDIT_MAX_ARMS]; /* robust mean reward, ns (0 = none) */
	__u64 sd[BANDIT_MAX_ARMS];   /* dispersion of one sample, ns */
	__u64 base;                  /* band_seq the current exploration starts at */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BANDIT_BANDS);
	__type(key, __u32);
	__type(value, struct bandit_stat);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, BANDIT_EPOCH_LOG2));
} bandit_stat SEC(".maps");

struct bandit_count {
	__u64 n[BANDIT_MAX_ARMS];  /* 1 + valid samples per arm (0 = none) */
	__u64 lo[BANDIT_MAX_ARMS]; /* the fastest rank's mean, ns (the MIN of what stat has) */
	__u64 seen;                /* 1 + band_seq of the last collective processed */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BANDIT_BANDS + 1); /* + the heartbeat */
	__type(key, __u32);
	__type(value, struct bandit_count);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MIN, BANDIT_EPOCH_LOG2));
} bandit_count SEC(".maps");

/* Branch-free selection (policy.h "branch-free arithmetic"): eight arms' worth of if/else
 * would multiply the verifier's paths. LT is the cheaper form for values below 2^63. */
#define LT(a, b) ((ncclbpf_opaque((__u64)(a) - (__u64)(b)) >> 63) & 1) /* a < b */
#define EQ(a, b) (1 - NCCLBPF_NZ((__u64)(a) ^ (__u64)(b)))            /* a == b */
#define BIG (1ull << 62)
/* published counts are stored as 1 + count (0 = no rank contributed) */
#define COUNT(v) ((((v) & 0xffff) - 1) & -NCCLBPF_NZ((v) & 0xffff))

/* 1000 / sqrt(n) for n = 0..16 (n = 0 never used), 16's beyond: a 32-entry table indexed
 * with & 31, which the verifier can bound */
static const __u32 inv_sqrt_1000[32] = {1000, 1000, 707, 577, 500, 447, 408, 378, 354, 333, 316,
					302,  289,  277, 267, 258, 250, 250, 250, 250, 250, 250,
					250,  250,  250, 250, 250, 250, 250, 250, 250, 250};

/* An arm's published mean (see cfg_rank_mix); 0 = none. */
static __always_inline __u64 arm_mean(const struct bandit_stat *st, const struct bandit_count *cnt,
				      __u32 a)
{
	__u64 hi = st->mean[a] & (BIG - 1), lo = cnt->lo[a] & (BIG - 1);
	lo = NCCLBPF_SEL(LT(hi, lo), hi, lo);
	__u64 mix = NCCLBPF_SEL(LT(100, cfg_rank_mix), 100, cfg_rank_mix);
	return hi - (hi - lo) * mix / 100;
}

/* The half-width of an arm's confidence interval: z sd / sqrt(n). */
static __always_inline __u64 half_width(__u64 sd, __u64 n)
{
	__u64 i = NCCLBPF_SEL(LT(n, 16), n, 16) & 31;
	return (sd & (BIG - 1)) * cfg_z_pct / 100 * inv_sqrt_1000[i] / 1000;
}

/* Per-arm sample budget for a collective of n_bytes (constant within a band while the
 * thresholds are powers of two). */
static __always_inline __u64 budget_of(__u64 n_bytes)
{
	/* branch-free: each branch here split the verifier's walk of everything after it in
	 * three (2, 250 or the value in between: the elimination phase walked three times) */
	__u64 m = NCCLBPF_SEL(LT(n_bytes, cfg_budget_small_below), cfg_budget_small,
			      NCCLBPF_SEL(LT(n_bytes, cfg_budget_large_from), cfg_budget, cfg_budget_large));
	m = NCCLBPF_SEL(LT(m, 2), 2, m);
	return NCCLBPF_SEL(LT(250, m), 250, m);
}

/* Band index of a collective, or -1 when the bandit leaves it to NCCL. */
static __always_inline int band_of(__u32 coll, __u64 n_bytes, __u32 n_nodes)
{
	if (coll >= NCCLBPF_NUM_COLLS || !((cfg_coll_mask >> coll) & 1) || n_nodes < cfg_min_nodes)
		return -1;
	__u32 b = ncclbpf_size_bucket(n_bytes);
	__u32 lo = cfg_bucket_min;
	if (b < lo || b - lo >= BANDIT_BUCKETS)
		return -1;
	return (int)(coll * BANDIT_BUCKETS + (b - lo));
}

/* 1 if configured arm a exists and is a valid pair. */
static __always_inline __u64 arm_valid(__u32 a)
{
	__u64 al = (__u32)cfg_arm_algo[a], pr = (__u32)cfg_arm_proto[a];
	return LT(a, cfg_n_arms) & LT(al, NCCLBPF_NUM_ALGOS) & LT(pr, NCCLBPF_NUM_PROTOS);
}

/* Index of the first arm equal to (algo, proto) in *arm; returns 1 if there is one. */
static __always_inline __u64 arm_find(__s32 algo, __s32 proto, __u64 *arm)
{
	__u64 found = 0, idx = 0;
#pragma clang loop unroll(disable)
	for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
		__u64 m = arm_valid(a) & EQ((__u32)cfg_arm_algo[a], (__u32)algo) &
			  EQ((__u32)cfg_arm_proto[a], (__u32)proto) & (1 - found);
		idx = NCCLBPF_SEL(m, a, idx);
		found |= m;
	}
	*arm = idx;
	return found;
}

/* A rank-invariant scramble of (band, round): rotates the order in which a band's arms take
 * their turns, differently per band and round, so that two bands that follow each other in
 * a step do not switch arms in lockstep (one band's stagger would otherwise always land on
 * the same arm of the next). */
static __always_inline __u64 rotation(__u64 band, __u64 round)
{
	__u64 h = (band + 1) * 0x9e3779b97f4a7c15ull ^ (round + 1) * 0xc2b2ae3d27d4eb4full;
	return (h ^ (h >> 29)) >> 32;
}

/* ------------------------------------------------------------------ tuner */

SEC("tuner")
int bandit_pick(struct ncclbpf_tuner_ctx *ctx)
{
	int band = band_of(ctx->coll_type, ctx->n_bytes, ctx->n_nodes);
	if (band < 0)
		return 0;
	/* Without measurements - no profiler plugin, or no agreement between the ranks -
	 * exploring forever would only cost time: after a while keep NCCL's choice. The
	 * heartbeat is the published count of all samples, the same on every rank. */
	__u32 hb_key = BANDIT_BANDS;
	struct bandit_count *hb = bpf_map_lookup_elem(&bandit_count, &hb_key);
	if (!hb || (!hb->n[0] && ctx->comm_seq >= cfg_heartbeat_after))
		return 0;
	__u32 key = (__u32)band;
	struct bandit_count *cnt = bpf_map_lookup_elem(&bandit_count, &key);
	struct bandit_stat *st = bpf_map_lookup_elem(&bandit_stat, &key);
	if (!cnt || !st)
		return 0;

	/* AUTO is the pair NCCL's cost table ranks first: non-negative floats order like their
	 * bit patterns; unavailable entries are -1 (sign bit: never the least). */
	__u64 auto_bits = BIG, auto_idx = 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS; i++) {
		__u64 bits = ((const __u32 *)ctx->cost)[i];
		__u64 m = ((ctx->avail_mask >> i) & 1) & LT(bits, auto_bits);
		auto_bits = NCCLBPF_SEL(m, bits, auto_bits);
		auto_idx = NCCLBPF_SEL(m, i, auto_idx);
	}
	if (auto_bits >= BIG)
		return 0; /* nothing available */
	/* pruned entries: cost above AUTO's x 2^cfg_prune_log2 (exponent + log2), none when 0 */
	__u64 prune = NCCLBPF_SEL(NCCLBPF_NZ(cfg_prune_log2),
				  auto_bits + ((__u64)(cfg_prune_log2 & 7) << 23), BIG);
	/* far entries: cost above AUTO's x 2^cfg_screen_far_log2 (a short screening) */
	__u64 far_thr = NCCLBPF_SEL(NCCLBPF_NZ(cfg_screen_far_log2),
				    auto_bits + ((__u64)(cfg_screen_far_log2 & 7) << 23), BIG);
	/* the LL entries of the cost table (one per algorithm) from cfg_ll_far_from on */
	__u64 ll_bits = 0;
#pragma clang loop unroll(full)
	for (int a = 0; a < NCCLBPF_NUM_ALGOS; a++)
		ll_bits |= 1ull << (a * NCCLBPF_NUM_PROTOS + NCCLBPF_PROTO_LL);
	__u64 farbits = ll_bits & -(NCCLBPF_NZ(cfg_ll_far_from) & (1 - LT(ctx->n_bytes, cfg_ll_far_from)));
	__u64 pruned = ll_bits & -(NCCLBPF_NZ(cfg_ll_prune_from) & (1 - LT(ctx->n_bytes, cfg_ll_prune_from)));
#pragma clang loop unroll(full)
	for (int i = 0; i < NCCLBPF_NUM_ALGOS * NCCLBPF_NUM_PROTOS; i++) {
		pruned |= LT(prune, ((const __u32 *)ctx->cost)[i]) << i;
		farbits |= LT(far_thr, ((const __u32 *)ctx->cost)[i]) << i;
	}
	/* valid screening samples per arm: cfg_screen, cfg_screen_far (1 .. cfg_screen) for far
	 * ones */
	__u64 sc = cfg_screen & 63;
	__u64 sf = NCCLBPF_SEL(LT(cfg_screen_far & 63, sc), cfg_screen_far & 63, sc);
	sf = NCCLBPF_SEL(EQ(sf, 0), 1, sf);

	/* candidates (a bit each), their number, AUTO's arm, the far ones, whether one still
	 * lacks its screening samples in the published counts */
	__u64 cand = 0, k = 0, auto_arm = BANDIT_MAX_ARMS, farm = 0, lack = 0;
#pragma clang loop unroll(disable)
	for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
		__u64 idx = ((__u64)(__u32)cfg_arm_algo[a] * NCCLBPF_NUM_PROTOS + (__u32)cfg_arm_proto[a]) & 31;
		__u64 is_auto = arm_valid(a) & EQ(idx, auto_idx) & EQ(auto_arm, BANDIT_MAX_ARMS);
		__u64 ok = arm_valid(a) & ((ctx->avail_mask >> idx) & 1) &
			   (is_auto | (1 - ((pruned >> idx) & 1)));
		__u64 far = ok & ((farbits >> idx) & 1) & (1 - is_auto);
		auto_arm = NCCLBPF_SEL(is_auto, a, auto_arm);
		__u64 c = COUNT(cnt->n[a]);
		lack |= ok & LT(c, NCCLBPF_SEL(far, sf, sc));
		cand |= ok << a;
		farm |= far << a;
		k += ok;
	}
	/* NCCL's choice is not a configured arm (NVLS, CollNet): nothing to measure it by */
	if (k == 0 || k > BANDIT_MAX_ARMS || auto_arm >= BANDIT_MAX_ARMS)
		return 0;

	/* the band's clock since its exploration started (a restart moves the base ahead) */
	__u64 base = NCCLBPF_SEL(LT(st->base, cfg_start_after), cfg_start_after, st->base);
	/* the band's progress in the published view: its collectives up to seen - 1 are in */
	__u64 seen = cnt->seen & (BIG - 1);
	if (ctx->band_seq < base)
		return 0; /* a restart is being agreed: NCCL's choice until the new screening */
	__u64 s = ctx->band_seq - base;
	__u64 which = BANDIT_MAX_ARMS; /* the arm to play (BANDIT_MAX_ARMS: keep NCCL's) */
	/* 2. screening: each candidate one block of 1 + its samples (the first is dropped), in
	 * the order of the candidates rotated by r0 - the ones from r0 on, then those before
	 * (two passes over the arms); scr_len: the whole screening */
	__u64 r0 = rotation(band, 0) % k, scr_len = 0, rank = 0;
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < 2 * BANDIT_MAX_ARMS; i++) {
		__u32 a = i & (BANDIT_MAX_ARMS - 1);
		rank = NCCLBPF_SEL(EQ(i, BANDIT_MAX_ARMS), 0, rank);
		__u64 in = (cand >> a) & 1;
		__u64 from_r0 = 1 - LT(rank, r0);
		__u64 take = in & NCCLBPF_SEL(LT(i, BANDIT_MAX_ARMS), from_r0, 1 - from_r0);
		__u64 len = (1 + NCCLBPF_SEL((farm >> a) & 1, sf, sc)) & -take;
		which = NCCLBPF_SEL(take & (1 - LT(s, scr_len)) & LT(s, scr_len + len), a, which);
		scr_len += len;
		rank += in;
	}
	if (s < scr_len) {
		/* screening: which is set */
	} else if ((1 - lack) | (1 - LT(seen, base + scr_len))) {
		/* (a sample lost - a neighbour without KernelCh - must not stall the band: once
		 * the band's published progress covers the screening, arms with fewer samples are
		 * judged with wider bounds, arms without any are left out. Not a count of the
		 * band's collectives: a host far ahead of the GPU - a full launch queue, ~130
		 * steps on the testbed - decides that many before the first sample is in) */
		/* 3. elimination on the published statistics (every candidate screened) */
		__u64 best = BIG, best_ub = BIG;
#pragma clang loop unroll(disable)
		for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
			__u64 in = (cand >> a) & 1;
			__u64 mu = arm_mean(st, cnt, a);
			__u64 h = half_width(st->sd[a], COUNT(cnt->n[a]));
			__u64 better = in & NCCLBPF_NZ(mu) & LT(mu, best);
			best = NCCLBPF_SEL(better, mu, best);
			best_ub = NCCLBPF_SEL(better, mu + h, best_ub);
		}
		/* survivors */
		__u64 budget = budget_of(ctx->n_bytes), surv = 0, ns = 0, need = 0, need_pub = 0;
		__u64 flight = NCCLBPF_SEL(LT(seen, ctx->band_seq), ctx->band_seq - seen, 0);
		__u64 l2 = ncclbpf_opaque(cfg_block & 63);
		if (l2 == 0)
			l2 = 1;
#pragma clang loop unroll(disable)
		for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
			__u64 in = (cand >> a) & 1;
			__u64 mu = arm_mean(st, cnt, a);
			__u64 h = half_width(st->sd[a], COUNT(cnt->n[a]));
			/* out: the lower bound above the best arm's upper bound */
			__u64 out = LT(best_ub, NCCLBPF_SEL(LT(h, mu), mu - h, 0));
			__u64 keep = in & NCCLBPF_NZ(mu) & (1 - out);
			surv |= keep << a;
			ns += keep;
		}
		if (ns == 0 || ns > BANDIT_MAX_ARMS)
			return 0;
		/* Turns decided but not yet published (in flight) count towards the budgets, so
		 * exploration stops when their samples will be in - only the round robin's turns:
		 * the collectives decided while the screening was in flight kept NCCL's choice
		 * (g8b: a host ~130 steps ahead had those ~130 waits credited to the survivors and
		 * exploited on three screening samples). Rank-invariant estimate from the current
		 * lag F = band_seq - seen: the round robin began about F after the screening (when
		 * its samples were published) and lasts about R, the survivors' missing samples
		 * at l2 - 1 per turn of l2 (in one-size runs the first collective of a turn gives
		 * no sample); in flight are the decisions after t - F (t: since the screening).
		 * Every survivor takes its turns until the neediest has its budget: one screened
		 * short (far) needs budget - sf samples, not budget - sc (g23: the turns credited
		 * never covered a far survivor's budget, and the round robin ran a whole lag
		 * longer - Tree/Simple at 1 MiB 76-91 collectives for a budget of 10). */
		__u64 spt = l2 - NCCLBPF_NZ(l2 - 1);
		__u64 scr = NCCLBPF_SEL(NCCLBPF_NZ(surv & farm), sf, sc);
		scr = NCCLBPF_SEL(LT(scr, budget), scr, budget);
		__u64 spt_d = ncclbpf_opaque(spt);
		if (spt_d == 0)
			spt_d = 1;
		__u64 rr_len = ns * ((budget - scr + spt_d - 1) / spt_d) * l2;
		__u64 t = s - scr_len;
		__u64 pub = t - NCCLBPF_SEL(LT(flight, t), flight, t); /* published since */
		__u64 lo = NCCLBPF_SEL(LT(pub, flight), flight, pub);
		__u64 hi = NCCLBPF_SEL(LT(t, flight + rr_len), t, flight + rr_len);
		__u64 rr_flight = NCCLBPF_SEL(LT(lo, hi), hi - lo, 0);
		/* (ns and l2 are >= 1: the divisor is not zero) */
		__u64 share = rr_flight * spt / ncclbpf_opaque(l2 * ns);
#pragma clang loop unroll(disable)
		for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
			__u64 in = (surv >> a) & 1, c = COUNT(cnt->n[a]);
			need |= in & LT(c + share, budget);
			need_pub |= in & LT(c, budget);
		}
		if (need_pub & (1 - need) & (1 - EQ(ns, 1))) {
			/* the turns still needed are in flight: NCCL's choice until their samples
			 * are published (exploiting on the screening's few samples would run a
			 * wrong pick for as long as the lag) */
			which = BANDIT_MAX_ARMS;
		} else if (need & (1 - EQ(ns, 1))) {
			/* survivors in turns of cfg_block, the order rotated every round */
			__u64 turn = t / l2;
			__u64 j = (turn % ns + rotation(band, 1 + turn / ns)) % ns;
			__u64 cum = 0;
#pragma clang loop unroll(disable)
			for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
				__u64 in = (surv >> a) & 1;
				which = NCCLBPF_SEL(in & EQ(cum, j), a, which);
				cum += in;
			}
		} else {
			/* 4. exploit: the best survivor, against AUTO's safety gate */
			__u64 bmu = BIG, barm = BANDIT_MAX_ARMS, bh = 0;
#pragma clang loop unroll(disable)
			for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
				__u64 in = (surv >> a) & 1;
				__u64 mu = arm_mean(st, cnt, a);
				__u64 better = in & LT(mu, bmu);
				bmu = NCCLBPF_SEL(better, mu, bmu);
				barm = NCCLBPF_SEL(better, a, barm);
				/* a best arm short of its budget carries its uncertainty */
				__u64 short_n = LT(COUNT(cnt->n[a]), budget);
				bh = NCCLBPF_SEL(better, half_width(st->sd[a], COUNT(cnt->n[a])) & -short_n, bh);
			}
			__u64 gate = NCCLBPF_SEL(LT(ctx->n_bytes, cfg_large_from), cfg_gate_small_pct,
						 cfg_gate_large_pct);
			gate = NCCLBPF_SEL(LT(100, gate), 100, gate);
			/* the safety gate against AUTO's mean, eliminated or not, with the best arm's
			 * mean one standard error up while it is short of its budget (a few samples
			 * of a noisy band - samples lost without KernelCh - do not displace NCCL's
			 * choice); NCCL's choice stays when AUTO has no sample */
			__u64 amu = arm_mean(st, cnt, auto_arm & (BANDIT_MAX_ARMS - 1));
			__u64 take = NCCLBPF_NZ(amu) & LT((bmu + bh * 100 / (2 * (cfg_z_pct | 1))) * 100,
							  amu * (100 - gate));
			which = NCCLBPF_SEL(take, barm, BANDIT_MAX_ARMS);
		}
	}
	/* AUTO's turn (or nothing to do): keep NCCL's choice rather than forcing the same
	 * pair, so AUTO is measured exactly as it runs when kept */
	if (which >= BANDIT_MAX_ARMS || which == auto_arm)
		return 0;
	ctx->algo = cfg_arm_algo[which & (BANDIT_MAX_ARMS - 1)];
	ctx->proto = cfg_arm_proto[which & (BANDIT_MAX_ARMS - 1)];
	return 0;
}

/* ------------------------------------------------------------------ profiler */

/* compare-exchange without a branch: x[i] <= x[j] afterwards */
#define CSWAP(x, i, j)                                                         \
	do {                                                                   \
		__u64 sw_ = LT(x[j], x[i]);                                    \
		__u64 lo_ = NCCLBPF_SEL(sw_, x[j], x[i]), hi_ = NCCLBPF_SEL(sw_, x[i], x[j]);  \
		x[i] = lo_;                                                    \
		x[j] = hi_;                                                    \
	} while (0)

/* Batcher's odd-even merge sort network for 8 values (19 compare-exchanges) */
#define SORT8(x)                                                               \
	do {                                                                   \
		CSWAP(x, 0, 1); CSWAP(x, 2, 3); CSWAP(x, 4, 5); CSWAP(x, 6, 7); \
		CSWAP(x, 0, 2); CSWAP(x, 1, 3); CSWAP(x, 4, 6); CSWAP(x, 5, 7); \
		CSWAP(x, 1, 2); CSWAP(x, 5, 6);                                \
		CSWAP(x, 0, 4); CSWAP(x, 1, 5); CSWAP(x, 2, 6); CSWAP(x, 3, 7); \
		CSWAP(x, 2, 4); CSWAP(x, 3, 5);                                \
		CSWAP(x, 1, 2); CSWAP(x, 3, 4); CSWAP(x, 5, 6);                \
	} while (0)

struct bandit_key {
	__u64 comm_id;
	__u32 band;
	__u32 arm; /* BANDIT_MAX_ARMS: the band's own record */
};

/* rank-local state per (communicator, band, arm) */
struct bandit_window {
	__u64 lat[BANDIT_WINDOW]; /* ring of the latest samples */
	__u64 seen;   /* samples since the last (re)start, warm-up included */
	__u64 n;      /* valid samples since the last (re)start */
	__u64 sum;    /* sum of the completed windows' trimmed means */
	__u64 iqr;    /* interquartile range of the last completed window */
	__u64 ref;    /* the arm's frozen statistic (budget reached), 0 = still learning */
	__u64 drift;  /* consecutive windows off the reference */
	__u64 last_arm_plus1; /* band record: the arm of the previous sample */
	__u64 run;            /* band record: samples in a row of that arm */
	__u64 restart;        /* band record: drift seen, restart at the next sample */
	__u64 api_prev;       /* band record: the application's call of its last sample */
	__u64 seq_prev;       /* band record: and its band_seq */
	__u64 ivl;            /* band record: the band's call interval, a moving average */
	/* band record, per arm: the statistic before the lateness correction (lat[]: 1 + the
	 * moving average of the host lateness its samples excused) */
	__u64 mean0[BANDIT_MAX_ARMS];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct bandit_key);
	__type(value, struct bandit_window);
} bandit_windows SEC(".maps");

/* IQR-trimmed mean of a full window (Tukey's fences on type-7 quartiles of 8 values);
 * *iqr: its interquartile range. */
static __always_inline __u64 trimmed_mean(const struct bandit_window *w, __u64 *iqr_out)
{
	__u64 x[BANDIT_WINDOW];
#pragma clang loop unroll(full)
	for (int i = 0; i < BANDIT_WINDOW; i++)
		x[i] = w->lat[i] & (BIG - 1);
	SORT8(x);
	__u64 q1 = x[1] + (3 * (x[2] - x[1])) / 4; /* h = 1.75 */
	__u64 q3 = x[5] + (x[6] - x[5]) / 4;       /* h = 5.25 */
	__u64 iqr = q3 - q1;
	*iqr_out = iqr;
	__u64 span = iqr + iqr / 2;
	__u64 lo = NCCLBPF_SEL(LT(span, q1), q1 - span, 0), hi = q3 + span;
	__u64 sum = 0, n = 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < BANDIT_WINDOW; i++) {
		__u64 in = (1 - LT(x[i], lo)) & (1 - LT(hi, x[i]));
		sum += x[i] & -in;
		n += in;
	}
	if (n == 0 || n > BANDIT_WINDOW) /* cannot happen: the quartiles lie within */
		return x[3];
	/* the asm keeps the division below the check (a BPF divide by zero yields 0, so the
	 * compiler may otherwise compute it first; the verifier rejects that) */
	return sum / ncclbpf_opaque(n);
}

/* The arm's statistic from its n valid samples: the completed windows' trimmed means
 * (w->sum) and the current partial window (v = n % 8 samples in slots 0..v-1: the mean of
 * its lowest v - v/4, at least one dropped from 2 on - outliers are slow ones), weighted by
 * their samples. *sd: the dispersion of one sample, IQR / 1.35 of the partial window once
 * it holds 4, else of the last full window (w->iqr); before the first full window at least
 * cfg_sd_prior_pct of the mean, after it at least cfg_sd_floor_pct. */
static __always_inline __u64 arm_stat(const struct bandit_window *w, __u64 *sd)
{
	__u64 n = w->n, v = n % BANDIT_WINDOW, full = n / BANDIT_WINDOW;
	__u64 x[BANDIT_WINDOW];
#pragma clang loop unroll(full)
	for (int i = 0; i < BANDIT_WINDOW; i++)
		x[i] = NCCLBPF_SEL(LT(i, v), w->lat[i] & (BIG - 1), BIG);
	SORT8(x);
	__u64 hi = v - (NCCLBPF_NZ(v >> 1) * (v / 4 + LT(v, 4)));
	__u64 psum = 0, q1 = 0, q3 = 0;
#pragma clang loop unroll(full)
	for (int i = 0; i < BANDIT_WINDOW; i++) {
		psum += x[i] & -LT(i, hi);
		q1 = NCCLBPF_SEL(EQ(i, v / 4), x[i], q1);
		q3 = NCCLBPF_SEL(EQ(i, v - 1 - v / 4), x[i], q3);
	}
	__u64 d = ncclbpf_opaque(hi);
	if (d == 0)
		d = 1;
	__u64 pmean = psum / d;
	__u64 tot = ncclbpf_opaque(n);
	if (tot == 0)
		tot = 1;
	__u64 mean = (w->sum * BANDIT_WINDOW + pmean * v) / tot;
	__u64 iqr = NCCLBPF_SEL(LT(v, 4), w->iqr, q3 - q1);
	/* a few samples' IQR understates the spread: the prior is the floor until a full
	 * window (8) is in */
	__u64 prior = mean * cfg_sd_prior_pct / 100, floor = mean * cfg_sd_floor_pct / 100;
	floor = NCCLBPF_SEL(EQ(full, 0), prior, floor);
	__u64 s = NCCLBPF_SEL(LT(v, 4) & EQ(full, 0), prior, iqr * 100 / 135);
	*sd = NCCLBPF_SEL(LT(s, floor), floor, s);
	return mean;
}

/* The all-zero record new windows start from (a map value: no stack copy). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct bandit_window);
} bandit_zero SEC(".maps");

static __always_inline struct bandit_window *window(struct bandit_key *k)
{
	/* create if missing (fails harmlessly if present), then look up: no branch on which */
	__u32 z = 0;
	struct bandit_window *zero = bpf_map_lookup_elem(&bandit_zero, &z);
	if (!zero)
		return NULL;
	bpf_map_update_elem(&bandit_windows, k, zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&bandit_windows, k);
}

/* Restarts this rank's measurements of a band: counts to zero (the published MIN follows,
 * so every rank re-explores), statistics dropped, the exploration base moved ahead. */
static __always_inline void restart_band(__u64 comm_id, __u32 band, struct bandit_count *cnt,
					 struct bandit_stat *st, __u64 band_seq)
{
	struct bandit_key k = {};
	k.comm_id = comm_id;
	k.band = band;
#pragma clang loop unroll(disable)
	for (__u32 a = 0; a <= BANDIT_MAX_ARMS; a++) {
		k.arm = a;
		struct bandit_window *w = bpf_map_lookup_elem(&bandit_windows, &k);
		if (w) {
			w->seen = 0;
			w->n = 0;
			w->sum = 0;
			w->iqr = 0;
			w->ref = 0;
			w->drift = 0;
			w->run = 0;
			w->last_arm_plus1 = 0;
			w->restart = 0;
		}
	}
#pragma clang loop unroll(full)
	for (int a = 0; a < BANDIT_MAX_ARMS; a++) {
		cnt->n[a] = 1;
		cnt->lo[a] = 0;
		st->mean[a] = 0;
		st->sd[a] = 0;
	}
	st->base = band_seq + cfg_restart_delay;
}

/* Per communicator on this rank: its last collective the profiler saw. */
struct bandit_last {
	__u64 comm_seq_plus1; /* its comm_seq + 1 when GPU-timed (0: not timed / none) */
	__u64 kstart_ns;      /* its kernel's start and end (host clock) */
	__u64 end_ns;         /* its completion (the reward's clock) */
	__u64 band_plus1;     /* its band + 1 (0: not ours) */
	__u64 arm;            /* BANDIT_MAX_ARMS: not a configured arm */
	__u64 band_seq;
	__u64 n_bytes;
	__u64 pband_plus1;    /* the band and arm of the collective before it */
	__u64 parm;
	__u64 api_ns;         /* the application's call of it (host clock) */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct bandit_last);
} bandit_last SEC(".maps");

NCCLBPF_SAMPLE_CTL_MAP;

SEC("profiler")
int bandit_observe(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 comm = ctx->comm_id;
	struct bandit_last fresh = {};
	bpf_map_update_elem(&bandit_last, &comm, &fresh, BPF_NOEXIST);
	struct bandit_last *lp = bpf_map_lookup_elem(&bandit_last, &comm);
	if (!lp)
		return 0;
	struct bandit_last p = *lp; /* the previous collective */
	int cband = band_of(ctx->coll_type, ctx->n_bytes, ctx->n_nodes);
	__u64 carm = BANDIT_MAX_ARMS;
	__u64 found = arm_find(ctx->algo, ctx->proto, &carm);
	/* Only a collective NCCL instrumented (KernelCh) has kernel timestamps (KernelCh
	 * sampling, NCCLBPF_PROFILE_SAMPLE); for the others host_ns is the enqueue time */
	__u64 timed = (ctx->flags & NCCLBPF_PROF_F_GPU_TIMED) != 0;
	lp->comm_seq_plus1 = NCCLBPF_SEL(timed, ctx->comm_seq + 1, 0);
	lp->kstart_ns = ctx->gpu_start_ns;
	lp->end_ns = ctx->gpu_end_ns;
	lp->band_plus1 = cband < 0 ? 0 : (__u64)cband + 1;
	lp->arm = NCCLBPF_SEL(found, carm, BANDIT_MAX_ARMS);
	lp->band_seq = ctx->band_seq;
	lp->n_bytes = ctx->n_bytes;
	lp->pband_plus1 = p.band_plus1;
	lp->parm = p.arm;
	/* the host's call of this one (the Coll start comes only after the launch) */
	__u64 issued = NCCLBPF_SEL(NCCLBPF_NZ(ctx->api_ns), ctx->api_ns, ctx->start_ns);
	lp->api_ns = issued;
	__u32 csband = ctx->size_bucket < 65 ? ctx->size_bucket : 64;
	if (cband < 0) {
		/* not ours: GPU-time it rarely (it still gets timed next to a sample of ours) */
		__u32 *sc = bpf_map_lookup_elem(&ncclbpf_sample_ctl, &csband);
		if (sc && cfg_sample_other)
			*sc = cfg_sample_other;
	}
	/* The sample: with cfg_reward 0 the previous collective's hold on the stream - from its
	 * kernel's start to this kernel's start (on the testbed a collective's network traffic
	 * outlasts its kernel and holds the next kernel back: docs/tuning.md) less the time the
	 * host had not yet issued this one; with 1 this collective's completion-to-completion
	 * period. Both need two consecutive GPU-timed collectives. */
	__u64 hold = cfg_reward == 0;
	__u64 both = timed & NCCLBPF_NZ(p.comm_seq_plus1) & EQ(p.comm_seq_plus1, ctx->comm_seq);
	__u64 band1 = NCCLBPF_SEL(hold, p.band_plus1, lp->band_plus1);
	__u64 arm = NCCLBPF_SEL(hold, p.arm, lp->arm);
	__u64 bseq = NCCLBPF_SEL(hold, p.band_seq, ctx->band_seq);
	__u64 nbytes = NCCLBPF_SEL(hold, p.n_bytes, ctx->n_bytes);
	__u64 pre_band1 = NCCLBPF_SEL(hold, p.pband_plus1, p.band_plus1);
	__u64 pre_arm = NCCLBPF_SEL(hold, p.parm, p.arm);
	/* hold: (end - kstart) of the previous + the GPU's wait after it, less host lateness */
	__u64 gap = NCCLBPF_SEL(LT(p.end_ns, ctx->gpu_start_ns), ctx->gpu_start_ns - p.end_ns, 0);
	__u64 late = NCCLBPF_SEL(LT(p.end_ns, issued), issued - p.end_ns, 0);
	__u64 wait = NCCLBPF_SEL(LT(late, gap), gap - late, 0);
	__u64 span = NCCLBPF_SEL(LT(p.kstart_ns, p.end_ns), p.end_ns - p.kstart_ns, 0);
	__u64 period = NCCLBPF_SEL(LT(p.end_ns, ctx->gpu_end_ns), ctx->gpu_end_ns - p.end_ns, 0);
	__u64 lat = NCCLBPF_SEL(hold, span + wait, period);
	/* the host lateness the hold excused (bounded: an idle host must not overflow it) */
	__u64 exc = (gap - wait) & -hold;
	exc = NCCLBPF_SEL(LT(exc, 1ull << 40), exc, 1ull << 40);
	if (band1 == 0 || band1 > BANDIT_BANDS)
		return 0; /* the sample's collective is not one of ours */
	__u32 key = (__u32)(band1 - 1);
	struct bandit_count *cnt = bpf_map_lookup_elem(&bandit_count, &key);
	struct bandit_stat *st = bpf_map_lookup_elem(&bandit_stat, &key);
	if (!cnt || !st)
		return 0;
	/* the band's progress: its collectives up to this one are in what this rank publishes */
	cnt->seen = bseq + 1;
	if (!both || arm >= BANDIT_MAX_ARMS || lat == 0 || lat >= BIG)
		return 0; /* not timed (or its neighbour was not), or not a configured arm */
	__u32 sband = ncclbpf_size_bucket(nbytes);
	struct bandit_key bk = {}, wk = {};
	bk.comm_id = wk.comm_id = ctx->comm_id;
	bk.band = wk.band = key;
	bk.arm = BANDIT_MAX_ARMS;
	wk.arm = (__u32)arm;
	struct bandit_window *bs = window(&bk);
	if (!bs)
		return 0;
	struct bandit_window *w = window(&wk);
	__u32 hb_key = BANDIT_BANDS;
	struct bandit_count *hb = bpf_map_lookup_elem(&bandit_count, &hb_key);
	if (!w || !hb)
		return 0;
	hb->n[0] = 1; /* the heartbeat: non-zero once published from any rank that measures */
	__u64 m = budget_of(nbytes);

	/* The host's lead over this rank's GPU in the band's collectives: the time from the
	 * application's call of the sample's collective to now over the band's call interval.
	 * A host that never waits - a full launch queue, ~130 steps on the testbed - decides
	 * that many collectives before their samples come here: the tuner keeps NCCL's choice
	 * that long while it waits for the samples of the screening and of the round robin. */
	__u64 dseq = NCCLBPF_SEL(LT(bs->seq_prev, bseq), bseq - bs->seq_prev, 0);
	__u64 dt = NCCLBPF_SEL(NCCLBPF_NZ(bs->api_prev) & LT(bs->api_prev, p.api_ns) & NCCLBPF_NZ(dseq),
			       p.api_ns - bs->api_prev, 0);
	__u64 dseq_d = ncclbpf_opaque(dseq);
	if (dseq_d == 0)
		dseq_d = 1;
	dt = dt / dseq_d;
	bs->ivl = NCCLBPF_SEL(NCCLBPF_NZ(dt), NCCLBPF_SEL(NCCLBPF_NZ(bs->ivl), (3 * bs->ivl + dt) / 4, dt),
			      bs->ivl);
	bs->api_prev = NCCLBPF_SEL(NCCLBPF_NZ(p.api_ns), p.api_ns, bs->api_prev);
	bs->seq_prev = bseq;
	__u64 lead = NCCLBPF_SEL(LT(p.api_ns, ctx->gpu_end_ns), ctx->gpu_end_ns - p.api_ns, 0);
	__u64 ivl = ncclbpf_opaque(bs->ivl & ((1ull << 40) - 1)), lag = 0;
	if (ivl != 0) /* (no interval yet: no lead) */
		lag = lead / ivl;
	lag = NCCLBPF_SEL(LT(lag, 4096), lag, 4096);
	/* Runs of one arm, counting only samples taken after the arm reached its budget. The
	 * decision is fixed between explorations, so another arm after a long such run means
	 * the tuner started re-exploring (another rank saw drift): start afresh too, or this
	 * rank's old statistics would dominate the MAX. Long: beyond twice the host's lead
	 * (the tuner's waits for samples in flight are as long as the lead). */
	__u64 long_run = BANDIT_RESTART_RUN + 2 * lag;
	if (NCCLBPF_NZ(bs->restart) | ((1 - EQ(bs->last_arm_plus1, arm + 1)) & (1 - LT(bs->run, long_run)))) {
		/* the new screening starts after the tuner, the lead ahead, sees the restart */
		restart_band(ctx->comm_id, key, cnt, st, bseq + 2 * lag);
		w->seen = 1; /* this sample opens the new exploration: a warm-up one */
		bs->last_arm_plus1 = arm + 1;
		__u32 *rc = bpf_map_lookup_elem(&ncclbpf_sample_ctl, &sband);
		if (rc)
			*rc = NCCLBPF_SAMPLE_EVERY;
		return 0;
	}
	__u64 same = EQ(bs->last_arm_plus1, arm + 1);
	__u64 complete = 1 - LT(w->n, m);
	bs->run = NCCLBPF_SEL(same, NCCLBPF_SEL(complete, bs->run + 1, 0), complete);
	bs->last_arm_plus1 = arm + 1;
	/* sampling: every collective while the band explores; once one arm has run long past
	 * its budget (exploitation), a burst now and then for the drift check - and every
	 * collective again as soon as a window looks slow */
	__u32 *sc = bpf_map_lookup_elem(&ncclbpf_sample_ctl, &sband);
	if (sc)
		*sc = bs->run >= long_run && !w->drift && cfg_sample_every > 1
			      ? NCCLBPF_SAMPLE_BURST(cfg_sample_every, cfg_sample_burst)
			      : NCCLBPF_SAMPLE_EVERY;

	w->seen++;
	if (w->seen <= cfg_warmup)
		return 0; /* warm-up: the first samples of an arm after a (re)start */
	/* right after another arm of the same band (one size at a time) the rank stagger of the
	 * previous collective - the first rank to finish starts the next first, and waits in
	 * it - may belong to the other arm */
	if (cfg_drop_after_switch && pre_band1 == band1 && pre_arm != arm)
		return 0;
	__u64 slot = w->n % BANDIT_WINDOW;
#pragma clang loop unroll(full)
	for (int i = 0; i < BANDIT_WINDOW; i++)
		w->lat[i] = NCCLBPF_SEL(EQ(slot, i), lat, w->lat[i]);
	/* the arm's excused lateness, a moving average (1/4 per sample), 1 + it, in the band
	 * record's lat[] (BANDIT_WINDOW >= BANDIT_MAX_ARMS); emin: the band's least */
	__u64 emin = BIG;
#pragma clang loop unroll(full)
	for (int i = 0; i < BANDIT_MAX_ARMS; i++) {
		__u64 xo = bs->lat[i] & (BIG - 1);
		__u64 xn = NCCLBPF_SEL(NCCLBPF_NZ(xo), (3 * xo + exc + 1) / 4, exc + 1);
		xn = NCCLBPF_SEL(EQ(arm, i), xn, xo);
		bs->lat[i] = xn;
		emin = NCCLBPF_SEL(NCCLBPF_NZ(xn) & LT(xn, emin), xn, emin);
	}
	w->n++;
	__u64 n = w->n < 250 ? w->n : 250;
	/* a window completed: its trimmed mean (the statistic, or the drift check) */
	__u64 tm = 0, iqr = 0;
	if (w->n % BANDIT_WINDOW == 0)
		tm = trimmed_mean(w, &iqr);
	if (!w->ref) {
		/* still learning: the count and the statistic as of this sample */
		if (tm) {
			w->sum += tm;
			w->iqr = iqr;
		}
#pragma clang loop unroll(disable)
		for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++)
			cnt->n[a] = NCCLBPF_SEL(EQ(arm, a), 1 + n, cnt->n[a]);
		__u64 sd = 0;
		__u64 mean = arm_stat(w, &sd);
		mean = mean ? mean : 1;
		/* Published: the statistic plus the lateness this arm's samples had excused beyond
		 * the least any arm of the band had (this rank's). Lateness every arm sees is the
		 * host's own (a slow host, its compute: excused); lateness that comes with one
		 * arm is that arm's cost: a host that waits for every collective resumes after
		 * the traffic, which outlasts a Tree kernel by 35-45 % - excused, Tree/Simple
		 * looked 30-40 % faster than it is (GPU call g4, docs/results.md 14.9). Every
		 * arm is republished, as the least moves. */
#pragma clang loop unroll(disable)
		for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
			st->sd[a] = NCCLBPF_SEL(EQ(arm, a), sd, st->sd[a]);
			__u64 m0 = NCCLBPF_SEL(EQ(arm, a), mean, bs->mean0[a] & (BIG - 1));
			bs->mean0[a] = m0;
			__u64 x = bs->lat[a] & (BIG - 1);
			__u64 adj = NCCLBPF_SEL(LT(emin, x), x - emin, 0);
			/* only arms with samples of this rank since the last (re)start */
			__u64 has = 1 - LT(cnt->n[a] & 0xffff, 2);
			st->mean[a] = NCCLBPF_SEL(has, m0 + adj, st->mean[a]);
			cnt->lo[a] = NCCLBPF_SEL(has, m0 + adj, cnt->lo[a]);
		}
		/* the budget reached: the statistic is frozen (the decision must not flap with
		 * noise), later windows only check for drift */
		if (w->n >= m) {
			w->ref = mean;
			w->drift = 0;
		}
		return 0;
	}
	/* drift: each later full window of a long run (the exploited arm) against the
	 * statistic; only a slowdown counts (a faster exploited arm is no worse a choice) */
	if (!tm || bs->run < BANDIT_WINDOW)
		return 0;
	__u64 ref = w->ref & (BIG - 1);
	if (tm > ref && (tm - ref) * 100 > ref * cfg_drift_pct)
		w->drift++;
	else
		w->drift = 0;
	if (w->drift >= cfg_drift_windows)
		bs->restart = 1; /* done by the next sample of the band (one code path) */
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

// SPDX-License-Identifier: BSD-3-Clause
/* bandit_v1: the bandit as of 2026-11-26 (docs/results.md 9.4-9.5), kept as the baseline the
 * issue-22 tests and GPU runs compare policies/bandit.bpf.c with, unchanged. Its description:
 *
 * bandit: online algorithm/protocol selection that learns from measured latencies.
 *
 * One object, two programs (load it as NCCL's tuner *and* profiler plugin):
 *  - bandit_observe (profiler): per rank, attributes every completed collective to the
 *    arm NCCL actually ran (its algorithm/protocol pair); its latency is the period from
 *    the previous collective's completion to its own (both GPU-timed, see below); discards
 *    warm-up samples, keeps windows of 8 latencies per arm and writes each arm's statistic
 *    (IQR-trimmed means) and sample count into two agreed maps (this rank's contribution),
 *    and asks the profiler for KernelCh on the collectives it needs (ncclbpf_sample_ctl);
 *  - bandit_pick (tuner): reads the *published* view of those maps - the same bytes on
 *    every rank at the same collective - and decides from it and rank-invariant inputs only.
 *
 * Agreement (docs/agreement.md): bandit_stat is reduced with MAX over ranks, so an arm's
 * latency is its slowest rank's (a collective takes as long as its slowest rank);
 * bandit_count with MIN, so one rank that restarts its measurements restarts exploration
 * for all. Versions are published every 2^BANDIT_EPOCH_LOG2 = 16 collectives and
 * activate at the same collective sequence number on every rank, so every rank switches
 * from exploration to exploitation (and back, after drift) at the same collective.
 *
 * State per (communicator, collective, size band): agreed maps are per communicator; a
 * band is one power of two of the byte count (ncclbpf_size_bucket).
 *
 * Arms: the (algorithm, protocol) pairs in cfg_arm_algo/cfg_arm_proto that NCCL offers for
 * the call (avail_mask); entries NCCL marked unavailable are never chosen. "AUTO" (keep
 * NCCL's choice) is the pair NCCL's cost table ranks first: it is measured like any arm,
 * as NCCL runs it when left alone (its exploration turns keep NCCL's choice).
 *
 * Exploration: while some available arm has fewer than M valid samples in the published
 * counts (M = 8 x cfg_explore_windows: 32 below 1 MiB, 16 up to 16 MiB, 8 from there by
 * default; after cfg_warmup discarded ones), pick round-robin
 * among those arms, indexed by the rank-invariant per-collective sequence number (its
 * base-k digit sum, so a workload that cycles through a few sizes still visits every arm),
 * in blocks of 2^cfg_explore_block_log2 collectives; the first sample after an arm change
 * is dropped (it carries the previous arm's stagger, see cfg_explore_block_log2).
 * No random numbers: they would differ between ranks. Each arm's statistic is the mean of
 * the IQR-trimmed means of its first M/8 windows of 8 samples, frozen until the next
 * exploration, so the decision does not flap with noise.
 *
 * Exploitation: the arm with the lowest published trimmed mean replaces AUTO only if it is
 * faster than AUTO's by more than the safety gate (cfg_gate_small_pct below
 * cfg_large_from bytes, cfg_gate_large_pct from there); otherwise NCCL's choice stays.
 *
 * Drift: on each rank, every later window of a long run of one arm (the exploited one) is
 * compared with the arm's frozen statistic; after cfg_drift_windows windows in a row slower
 * by more than cfg_drift_pct, the rank restarts the band's measurements: its counts drop
 * to zero, the published MIN follows, and every rank re-explores from the same collective.
 * The other ranks see the exploited arm's run end and restart too.
 *
 * Without measurements (no profiler plugin, no agreement between the ranks) nothing is
 * published; after cfg_heartbeat_after collectives the tuner then keeps NCCL's choice
 * instead of exploring forever.
 *
 * Configuration is .rodata (`const volatile`): operators can change it in a built object
 * (as `ncclbpf tune -o` does for tuned_rules) without touching the logic.
 */
#include <ncclbpf/policy.h>

#define BANDIT_MAX_ARMS 8
#define BANDIT_WINDOW 8         /* samples per arm for a statistic (the M rounds) */
#define BANDIT_BUCKETS 24       /* size bands per collective from cfg_bucket_min */
#define BANDIT_BANDS (NCCLBPF_NUM_COLLS * BANDIT_BUCKETS)
#define BANDIT_EPOCH_LOG2 4     /* agreed-map epoch: 16 collectives */
/* a run of the exploited arm this long, then another arm: the tuner is re-exploring
 * (longer than the two-epoch lag plus a window) */
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
const volatile __u32 cfg_warmup = 1;             /* samples per arm discarded after a (re)start */
const volatile __u32 cfg_explore_windows = 2;    /* windows of 8 per arm: M = 8 x this (1..4) */
/* Small collectives are cheap to explore and noisy (on the GPU testbed 4 KiB..256 KiB vary by
 * +-30 %, neighbouring arms lie 3-8 % apart); large ones are costly (one 64 MiB sample of a
 * slow arm takes 75 ms) and steadier: M follows the size. */
const volatile __u32 cfg_explore_windows_small = 4; /* below cfg_explore_small_below */
const volatile __u64 cfg_explore_small_below = 1ull << 20;
const volatile __u32 cfg_explore_windows_large = 1; /* from cfg_explore_large_from */
const volatile __u64 cfg_explore_large_from = 16ull << 20;
const volatile __u32 cfg_gate_small_pct = 5;     /* safety gate below cfg_large_from */
const volatile __u32 cfg_gate_large_pct = 10;    /* and from there on */
const volatile __u64 cfg_large_from = 64ull << 20;
const volatile __u32 cfg_drift_pct = 50;         /* exploited arm slower than its reference by
						  * this (the GPU testbed's windows vary by
						  * up to ~30 %) */
const volatile __u32 cfg_drift_windows = 4;      /* ... for this many windows in a row */
/* Exploration plays each arm for 2^cfg_explore_block_log2 consecutive collectives (of the
 * communicator's sequence) and the profiler drops the first sample after an arm change.
 * Why: on the GPU testbed (final sweep, docs/results.md 9.2) a collective's ranks finish at
 * different times - Tree staggers more than Ring - and the rank that finishes first starts
 * the next collective first, so the wait lands in the *next* collective's time. Alternating
 * arms one collective at a time charged every arm the average stagger of the others: Tree
 * looked > 5 % faster than Ring at 1-4 MiB on 4 nodes (it was 8-18 % slower back to
 * back), and exploited Tree arms at 4-16 KiB, now paying their own stagger, looked > 50 %
 * slower than their statistics (drift, re-exploration in the timed collectives). In blocks each
 * kept sample follows the same arm, as in exploitation. 0: one collective per turn. */
const volatile __u32 cfg_explore_block_log2 = 3;
const volatile __u32 cfg_drop_after_switch = 1;
/* KernelCh (the GPU timestamps a completion time needs) costs NCCL about 1 us per small
 * collective, 3-8 % on the GPU testbed: every collective while exploring, then the first
 * cfg_sample_burst of every cfg_sample_every collectives of the band (one window of periods
 * for the drift check, plus the collective before it), and bands the bandit leaves to NCCL
 * as cfg_sample_other (NCCLBPF_SAMPLE_BURST(n, b); 0: the profiler's default). */
const volatile __u32 cfg_sample_every = 64;
const volatile __u32 cfg_sample_burst = BANDIT_WINDOW + 1;
const volatile __u32 cfg_sample_other = NCCLBPF_SAMPLE_BURST(256, 1);
const volatile __u64 cfg_heartbeat_after = 256;  /* no measurement published after this many
						  * collectives: keep NCCL's choice */

/* ---- agreed maps: this rank's contribution (profiler), the published view (tuner) ---- */
struct bandit_arms {
	__u64 v[BANDIT_MAX_ARMS];
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BANDIT_BANDS);
	__type(key, __u32);
	__type(value, struct bandit_arms); /* trimmed mean ns per arm, 0 = none yet */
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, BANDIT_EPOCH_LOG2));
} bandit_stat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, BANDIT_BANDS + 1); /* + the heartbeat */
	__type(key, __u32);
	__type(value, struct bandit_arms); /* 1 + valid samples per arm (0 = not contributed) */
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MIN, BANDIT_EPOCH_LOG2));
} bandit_count SEC(".maps");

/* ---- rank-local state of the profiler program ---- */
struct bandit_key {
	__u64 comm_id;
	__u32 band;
	__u32 arm; /* BANDIT_MAX_ARMS: the band's own record */
};

struct bandit_window {
	__u64 lat[BANDIT_WINDOW];
	__u64 seen;   /* samples since the last (re)start, warm-up included */
	__u64 n;      /* valid samples since the last (re)start */
	__u64 sum;    /* sum of the exploration windows' trimmed means */
	__u64 ref;    /* the arm's exploration statistic (published), 0 = exploring */
	__u64 drift;  /* consecutive windows off the reference */
	__u64 last_arm_plus1; /* band record: the arm of the previous sample */
	__u64 run;            /* band record: samples in a row of that arm */
	__u64 restart;        /* band record: drift seen, restart at the next sample */
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, struct bandit_key);
	__type(value, struct bandit_window);
} bandit_windows SEC(".maps");

/* Branch-free selection (policy.h "branch-free arithmetic"): written with if/else, eight
 * arms' worth of "keep the smaller one" would multiply into millions of verifier paths.
 * LT is the cheaper form for values below 2^63 (latencies in ns, counts, indices). */
#define LT(a, b) ((ncclbpf_opaque((__u64)(a) - (__u64)(b)) >> 63) & 1) /* a < b */
#define EQ(a, b) (1 - NCCLBPF_NZ((__u64)(a) ^ (__u64)(b)))            /* a == b */
#define BIG (1ull << 62)
/* published counts are stored as 1 + count (0 = no rank contributed) */
#define COUNT(v) ((((v) & 0xffff) - 1) & -NCCLBPF_NZ((v) & 0xffff))

/* M: valid samples per arm before exploitation, for a collective of n_bytes (constant
 * within a band as long as the thresholds are powers of two, as they are by default). */
static __always_inline __u64 explore_samples(__u64 n_bytes)
{
	__u32 w = n_bytes < cfg_explore_small_below ? cfg_explore_windows_small
		: n_bytes >= cfg_explore_large_from ? cfg_explore_windows_large
						    : cfg_explore_windows;
	return (__u64)(w < 1 ? 1 : w > 4 ? 4 : w) * BANDIT_WINDOW;
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
	struct bandit_arms *hb = bpf_map_lookup_elem(&bandit_count, &hb_key);
	if (!hb || (!hb->v[0] && ctx->comm_seq >= cfg_heartbeat_after))
		return 0;
	__u32 key = (__u32)band;
	struct bandit_arms *cnt = bpf_map_lookup_elem(&bandit_count, &key);
	struct bandit_arms *st = bpf_map_lookup_elem(&bandit_stat, &key);
	if (!cnt || !st)
		return 0;

	/* available arms (a bit each) and the least published sample count among them */
	__u64 avail = 0, minc = BIG;
#pragma clang loop unroll(disable)
	for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
		__u64 idx = ((__u64)(__u32)cfg_arm_algo[a] * NCCLBPF_NUM_PROTOS + (__u32)cfg_arm_proto[a]) & 31;
		__u64 ok = arm_valid(a) & ((ctx->avail_mask >> idx) & 1);
		__u64 c = COUNT(cnt->v[a]);
		minc = NCCLBPF_SEL(ok & LT(c, minc), c, minc);
		avail |= ok << a;
	}
	if (!avail)
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
	__u64 auto_algo = auto_idx / NCCLBPF_NUM_PROTOS, auto_proto = auto_idx % NCCLBPF_NUM_PROTOS;

	__u64 m = explore_samples(ctx->n_bytes);
	if (minc < m) {
		/* explore: round-robin among the arms still short of M samples */
		__u64 k = 0;
#pragma clang loop unroll(disable)
		for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++)
			k += ((avail >> a) & 1) & LT(COUNT(cnt->v[a]), m);
		if (k == 0 || k > BANDIT_MAX_ARMS)
			return 0;
		/* digit sum of seq in base k (three digits and the rest): a size that recurs every
		 * p-th collective of its type still cycles through all k arms */
		__u64 s = ctx->seq >> (cfg_explore_block_log2 & 7);
		__u64 j = (s + s / k + s / (k * k) + s / (k * k * k)) % k;
		__u64 cum = 0, algo = 0, proto = 0;
#pragma clang loop unroll(disable)
		for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
			__u64 in = ((avail >> a) & 1) & LT(COUNT(cnt->v[a]), m);
			__u64 pick = in & EQ(cum, j);
			algo = NCCLBPF_SEL(pick, (__u32)cfg_arm_algo[a], algo);
			proto = NCCLBPF_SEL(pick, (__u32)cfg_arm_proto[a], proto);
			cum += in;
		}
		/* AUTO's turn: keep NCCL's choice rather than forcing the same pair, so AUTO is
		 * measured exactly as it runs when kept (on the GPU testbed the default beat its
		 * own pair forced by up to 2 %, enough to make keeping it look worse) */
		if (EQ(algo, auto_algo) & EQ(proto, auto_proto) & (1 - EQ(auto_bits, BIG)))
			return 0;
		ctx->algo = (__s32)algo;
		ctx->proto = (__s32)proto;
		return 0;
	}

	/* exploit */
	__u64 auto_ns = 0, auto_found = 0, best_ns = BIG, best_algo = 0, best_proto = 0;
#pragma clang loop unroll(disable)
	for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++) {
		__u64 v = st->v[a] & (BIG - 1);
		__u64 ok = (avail >> a) & 1;
		__u64 is_auto = ok & EQ((__u32)cfg_arm_algo[a], auto_algo) &
				EQ((__u32)cfg_arm_proto[a], auto_proto) & (1 - auto_found);
		auto_ns = NCCLBPF_SEL(is_auto, v, auto_ns);
		auto_found |= is_auto;
		__u64 better = ok & NCCLBPF_NZ(v) & LT(v, best_ns);
		best_ns = NCCLBPF_SEL(better, v, best_ns);
		best_algo = NCCLBPF_SEL(better, (__u32)cfg_arm_algo[a], best_algo);
		best_proto = NCCLBPF_SEL(better, (__u32)cfg_arm_proto[a], best_proto);
	}
	if (!auto_found || !auto_ns || best_ns >= BIG)
		return 0; /* NCCL's choice is not a measured arm: nothing to compare it with */
	__u64 gate = ctx->n_bytes >= cfg_large_from ? cfg_gate_large_pct : cfg_gate_small_pct;
	if (gate > 100)
		gate = 100;
	/* safety gate: replace AUTO only when clearly faster (AUTO itself never passes) */
	if (best_ns * 100 < auto_ns * (100 - gate)) {
		ctx->algo = (__s32)best_algo;
		ctx->proto = (__s32)best_proto;
	}
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

/* IQR-trimmed mean of the window (Tukey's fences on type-7 quartiles of 8 values). */
static __always_inline __u64 trimmed_mean(const struct bandit_window *w)
{
	__u64 x[BANDIT_WINDOW];
#pragma clang loop unroll(full)
	for (int i = 0; i < BANDIT_WINDOW; i++)
		x[i] = w->lat[i] & (BIG - 1);
	/* Batcher's odd-even merge sort network for 8 values (19 compare-exchanges) */
	CSWAP(x, 0, 1); CSWAP(x, 2, 3); CSWAP(x, 4, 5); CSWAP(x, 6, 7);
	CSWAP(x, 0, 2); CSWAP(x, 1, 3); CSWAP(x, 4, 6); CSWAP(x, 5, 7);
	CSWAP(x, 1, 2); CSWAP(x, 5, 6);
	CSWAP(x, 0, 4); CSWAP(x, 1, 5); CSWAP(x, 2, 6); CSWAP(x, 3, 7);
	CSWAP(x, 2, 4); CSWAP(x, 3, 5);
	CSWAP(x, 1, 2); CSWAP(x, 3, 4); CSWAP(x, 5, 6);
	__u64 q1 = x[1] + (3 * (x[2] - x[1])) / 4; /* h = 1.75 */
	__u64 q3 = x[5] + (x[6] - x[5]) / 4;       /* h = 5.25 */
	__u64 iqr = q3 - q1;
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

/* The all-zero record new windows start from (a map value: no 112-byte stack copy). */
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
 * so every rank re-explores from the same collective), statistics dropped. */
static __always_inline void restart_band(__u64 comm_id, __u32 band, struct bandit_arms *cnt,
					 struct bandit_arms *st)
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
			w->ref = 0;
			w->drift = 0;
			w->run = 0;
			w->last_arm_plus1 = 0;
			w->restart = 0;
		}
	}
#pragma clang loop unroll(full)
	for (int a = 0; a < BANDIT_MAX_ARMS; a++) {
		cnt->v[a] = 1;
		st->v[a] = 0;
	}
}

/* Per communicator: the completion time of its last GPU-timed collective. */
struct bandit_last {
	__u64 seq_plus1; /* its sequence number + 1 (0: none) */
	__u64 end_ns;    /* its completion, host clock (start_ns + host_ns) */
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
	/* Only a collective NCCL instrumented (KernelCh) has a completion time: for the others
	 * host_ns is the enqueue time, not a latency (KernelCh sampling, NCCLBPF_PROFILE_SAMPLE) */
	if (!(ctx->flags & NCCLBPF_PROF_F_GPU_TIMED))
		return 0;
	/* The reward is the completion-to-completion period: this collective's completion
	 * minus the previous collective's (of the communicator, whatever its size). Measured on
	 * the GPU testbed (docs/results.md 9.4), a collective's own span - the kernel's GPU time
	 * or enqueue-to-completion - misses time that the algorithm costs between kernels: at
	 * 1 MiB on 4 emulated nodes Tree/Simple's kernels took 520-560 us against Ring/Simple's
	 * 790-800, while one Tree/Simple collective after another took 875-956 us against
	 * 805-822 (back to back 822-887 against 768-845). The period is what the job pays per
	 * collective when collectives follow each other; with compute in between it includes
	 * that compute, which makes every arm look alike (the gate then keeps NCCL's choice)
	 * but does not reorder them. */
	__u64 end = ctx->start_ns + ctx->host_ns;
	__u64 comm = ctx->comm_id;
	struct bandit_last fresh = {};
	bpf_map_update_elem(&bandit_last, &comm, &fresh, BPF_NOEXIST);
	struct bandit_last *lp = bpf_map_lookup_elem(&bandit_last, &comm);
	if (!lp)
		return 0;
	__u64 prev_seq1 = lp->seq_plus1, prev_end = lp->end_ns;
	lp->seq_plus1 = ctx->seq + 1;
	lp->end_ns = end;

	__u32 sband = ctx->size_bucket < 65 ? ctx->size_bucket : 64;
	int band = band_of(ctx->coll_type, ctx->n_bytes, ctx->n_nodes);
	if (band < 0) {
		/* not ours: GPU-time it rarely (it still gets timed right before a sample of ours) */
		__u32 *sc = bpf_map_lookup_elem(&ncclbpf_sample_ctl, &sband);
		if (sc && cfg_sample_other)
			*sc = cfg_sample_other;
		return 0;
	}
	__u64 arm;
	if (!arm_find(ctx->algo, ctx->proto, &arm))
		return 0;
	if (!prev_seq1 || prev_seq1 != ctx->seq || end <= prev_end)
		return 0; /* no previous collective, or it was not timed: no period */
	__u64 lat = end - prev_end;
	if (lat >= BIG)
		return 0;
	__u32 key = (__u32)band;
	struct bandit_arms *cnt = bpf_map_lookup_elem(&bandit_count, &key);
	struct bandit_arms *st = bpf_map_lookup_elem(&bandit_stat, &key);
	struct bandit_key bk = {}, wk = {};
	bk.comm_id = wk.comm_id = ctx->comm_id;
	bk.band = wk.band = key;
	bk.arm = BANDIT_MAX_ARMS;
	wk.arm = (__u32)arm;
	struct bandit_window *bs = window(&bk);
	if (!cnt || !st || !bs)
		return 0;

	struct bandit_window *w = window(&wk);
	__u32 hb_key = BANDIT_BANDS;
	struct bandit_arms *hb = bpf_map_lookup_elem(&bandit_count, &hb_key);
	if (!w || !hb)
		return 0;
	hb->v[0] = 1; /* the heartbeat: non-zero once published from any rank that measures */
	__u64 m = explore_samples(ctx->n_bytes);

	/* Runs of one arm, counting only samples taken after the arm's exploration. The
	 * decision is fixed between explorations, so another arm after a long such run means
	 * the tuner started re-exploring (another rank saw drift): start afresh too, or this
	 * rank's old statistics would dominate the MAX. The run must outlast the overshoot at
	 * the end of an exploration (the published counts lag by up to two epochs). */
	if (NCCLBPF_NZ(bs->restart) | ((1 - EQ(bs->last_arm_plus1, arm + 1)) & (1 - LT(bs->run, BANDIT_RESTART_RUN)))) {
		restart_band(ctx->comm_id, key, cnt, st);
		/* this sample opens the new exploration: it counts as a warm-up one */
		w->seen = 1;
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
	 * its exploration (exploitation), a burst now and then for the drift check - and every
	 * collective again as soon as a window looks slow, so drift is confirmed or dismissed
	 * within a few windows rather than a few bursts */
	__u32 *sc = bpf_map_lookup_elem(&ncclbpf_sample_ctl, &sband);
	if (sc)
		*sc = bs->run >= BANDIT_RESTART_RUN && !w->drift && cfg_sample_every > 1
			      ? NCCLBPF_SAMPLE_BURST(cfg_sample_every, cfg_sample_burst)
			      : NCCLBPF_SAMPLE_EVERY;

	w->seen++;
	if (w->seen <= cfg_warmup)
		return 0; /* warm-up: the first samples of an arm after a (re)start */
	if (!same && cfg_drop_after_switch)
		return 0; /* carries the previous arm's stagger (cfg_explore_block_log2) */
	__u64 slot = w->n % BANDIT_WINDOW;
#pragma clang loop unroll(full)
	for (int i = 0; i < BANDIT_WINDOW; i++)
		w->lat[i] = NCCLBPF_SEL(EQ(slot, i), lat, w->lat[i]);
	w->n++;
	__u64 n = w->n < 250 ? w->n : 250;
#pragma clang loop unroll(disable)
	for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++)
		cnt->v[a] = NCCLBPF_SEL(EQ(arm, a), 1 + n, cnt->v[a]);
	if (w->n % BANDIT_WINDOW)
		return 0;
	__u64 tm = trimmed_mean(w); /* a full window of fresh samples */
	if (w->n <= m) {
		/* exploration: the arm's statistic is the mean of its first windows */
		w->sum += tm;
		if (w->n < m)
			return 0;
		__u64 stat = w->sum / (m / BANDIT_WINDOW);
		w->ref = stat ? stat : 1;
#pragma clang loop unroll(disable)
		for (__u32 a = 0; a < BANDIT_MAX_ARMS; a++)
			st->v[a] = NCCLBPF_SEL(EQ(arm, a), w->ref, st->v[a]);
		return 0;
	}

	/* drift: each later window of a long run (the exploited arm) against the statistic */
	if (bs->run < BANDIT_WINDOW || !w->ref)
		return 0;
	/* only a slowdown counts: the exploited arm getting faster does not make it a worse
	 * choice, and a change of regime that makes every collective look faster (queued
	 * collectives timed back to back after waited-for ones, as in the GPU testbed) would
	 * otherwise re-explore the slow arms for nothing */
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

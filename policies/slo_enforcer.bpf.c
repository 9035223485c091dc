/* slo_enforcer: a latency target per collective type, rank-consistent by construction.
 *
 * Targets (ns, 0 = none) are configuration in slo_targets, read-only to programs
 * (BPF_F_RDONLY_PROG): the operator writes the same values on every rank, like an
 * environment variable. Levels, cheapest first: 0 NCCL's choice; 1 every channel NCCL ran
 * on this communicator; 2 + Ring/LL128; 3 + Ring/Simple (2 and 3 only where NCCL allows
 * them).
 *
 * The profiler program records an EWMA of each collective's latency under the level that
 * configuration corresponds to, into the agreed map slo_lat; the runtime reduces it with
 * MAX over the ranks every 32 collectives. The tuner, stateless, picks the cheapest level
 * whose measured max-over-ranks latency meets the target; if none does, the cheapest level
 * not measured yet (an escalation); if all are measured and none meets it, the fastest.
 * Every 16th epoch window it re-probes level 0, so the job relaxes after a congestion
 * spike. Same bytes on every rank -> same decision on every rank. */
#include <ncclbpf/policy.h>

#define SLO_LEVELS 4
#define SLO_BUCKETS 64
#define SLO_CAP_KEY (NCCLBPF_NUM_COLLS * SLO_BUCKETS)
#define SLO_LOG2_EPOCH 5 /* K = 32 */
#define SLO_RELAX_PERIOD 16

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_RDONLY_PROG);
} slo_targets SEC(".maps");

struct slo_lat {
	__u64 ewma_ns[SLO_LEVELS];
	__u64 count[SLO_LEVELS];
	__u64 cap; /* CAP entry: most channels NCCL ran on this comm */
	__u64 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, SLO_CAP_KEY + 1);
	__type(key, __u32);
	__type(value, struct slo_lat);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, SLO_LOG2_EPOCH));
} slo_lat SEC(".maps");

SEC("profiler")
int slo_enforcer_record(struct ncclbpf_profiler_ctx *ctx)
{
	if (ctx->coll_type >= NCCLBPF_NUM_COLLS || ctx->size_bucket >= SLO_BUCKETS ||
	    ctx->n_channels == 0)
		return 0;
	__u64 lat = ctx->gpu_ns ? ctx->gpu_ns : ctx->host_ns;
	if (lat == 0)
		return 0;
	__u32 cap_key = SLO_CAP_KEY;
	struct slo_lat *cap = bpf_map_lookup_elem(&slo_lat, &cap_key);
	if (!cap)
		return 0;
	if (ctx->n_channels > cap->cap)
		cap->cap = ctx->n_channels;
	/* which level's configuration ran */
	__u32 level = 0;
	if (ctx->n_channels >= cap->cap) {
		level = 1;
		if (ctx->algo == NCCLBPF_ALGO_RING && ctx->proto == NCCLBPF_PROTO_LL128)
			level = 2;
		else if (ctx->algo == NCCLBPF_ALGO_RING && ctx->proto == NCCLBPF_PROTO_SIMPLE)
			level = 3;
	}
	__u32 key = ctx->coll_type * SLO_BUCKETS + ctx->size_bucket;
	struct slo_lat *e = bpf_map_lookup_elem(&slo_lat, &key);
	if (!e)
		return 0;
	if (e->count[level] == 0)
		e->ewma_ns[level] = lat;
	else
		e->ewma_ns[level] = e->ewma_ns[level] - (e->ewma_ns[level] >> 2) + (lat >> 2);
	if (e->count[level] < 1000)
		e->count[level]++;
	return 0;
}

/* Why parts of the tuner are branch-free (policy.h "branch-free arithmetic"): written with
 * if's, the size bucket's five halving steps (the bucket is part of the map key) and one
 * scan over the levels keeping four running results, each updated under its own if,
 * multiplied into ~4,400 instructions processed and > 1 ms to verify. */

/* The level to run for a band's measurements e, or SLO_LEVELS when none is measured
 * (NCCL's choice). Each question is its own scan that returns at the first answer, so a
 * path of the verifier's walk carries a constant or ends; the arg-min, which has to see
 * every level, is branch-free. */
static __always_inline __u64 pick_level(const struct slo_lat *e, __u64 target)
{
	/* the cheapest measured level that meets the target */
#pragma unroll
	for (__u32 l = 0; l < SLO_LEVELS; l++)
		if (e->count[l] != 0 && e->ewma_ns[l] <= target)
			return l;
	__u64 measured = 0;
#pragma unroll
	for (__u32 l = 0; l < SLO_LEVELS; l++)
		measured |= e->count[l];
	if (measured == 0)
		return SLO_LEVELS;
	/* none meets it: the cheapest level above 0 not measured yet (an escalation) ... */
#pragma unroll
	for (__u32 l = 1; l < SLO_LEVELS; l++)
		if (e->count[l] == 0)
			return l;
	/* ... else the first measured level with the lowest latency (below ~0) */
	__u64 fastest = 0, fastest_ns = ~0ull;
#pragma unroll
	for (__u32 l = 0; l < SLO_LEVELS; l++) {
		__u64 ns = e->ewma_ns[l];
		__u64 faster = NCCLBPF_NZ(e->count[l]) & NCCLBPF_LT(ns, fastest_ns);
		fastest_ns = NCCLBPF_SEL(faster, ns, fastest_ns);
		fastest = NCCLBPF_SEL(faster, l, fastest);
	}
	return fastest;
}

SEC("tuner")
int slo_enforcer(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 coll = ctx->coll_type;
	__u64 *target = bpf_map_lookup_elem(&slo_targets, &coll);
	if (!target || *target == 0)
		return 0;
	__u32 bucket = ncclbpf_size_bucket(ctx->n_bytes);
	if (coll >= NCCLBPF_NUM_COLLS || bucket >= SLO_BUCKETS)
		return 0;
	__u32 cap_key = SLO_CAP_KEY;
	struct slo_lat *capv = bpf_map_lookup_elem(&slo_lat, &cap_key);
	__u32 key = coll * SLO_BUCKETS + bucket;
	struct slo_lat *e = bpf_map_lookup_elem(&slo_lat, &key);
	if (!capv || !e || capv->cap == 0)
		return 0;
	__u64 level = pick_level(e, *target);
	if (level == SLO_LEVELS)
		return 0;
	/* relax probe: every SLO_RELAX_PERIOD-th window runs NCCL's choice again */
	if (((ctx->comm_seq >> SLO_LOG2_EPOCH) % SLO_RELAX_PERIOD) == SLO_RELAX_PERIOD - 1)
		level = 0;
	if (level == 0)
		return 0;
	__u64 cap = capv->cap > NCCLBPF_MAX_CHANNELS ? NCCLBPF_MAX_CHANNELS : capv->cap;
	ctx->n_channels = (__s32)cap;
	if (level == 2 && NCCLBPF_AVAILABLE(ctx, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_LL128;
	} else if (level >= 2 && NCCLBPF_AVAILABLE(ctx, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

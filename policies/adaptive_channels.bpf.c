/* adaptive_channels: closed-loop channel tuning, rank-consistent by construction.
 *
 * The profiler program records, per (collective, size bucket) and per channel count it saw
 * NCCL run (slots 1, 2, 4, ..., 64 channels), an EWMA of the collective's latency into the
 * agreed map ac_lat. The runtime reduces it across the ranks of the communicator with MAX
 * every 64 collectives: the tuner sees, per channel count, the latency of the SLOWEST rank
 * - the one that decides when the collective completes - and the same bytes on every rank.
 *
 * The tuner program is stateless: its decision is a function of ctx's rank-invariant
 * fields and the published view only (so it passes strict verification):
 *  - nothing measured yet: keep NCCL's choice (NCCL's own channel count gets measured and
 *    tells us the communicator's capacity, ac_lat's CAP entry);
 *  - explore: the smallest power-of-two count up to the capacity with fewer than 2 samples;
 *  - exploit: the count with the lowest max-over-ranks latency; every 8th epoch window it
 *    re-probes a neighbour of the best (alternating up/down), so a count that got faster
 *    after a contention spike is found again;
 *  - contention: the current count's latency rises in the view, another count becomes the
 *    argmin, and the next version moves every rank to it at the same collective. */
#include <ncclbpf/policy.h>

#define AC_SLOTS 7         /* 1, 2, 4, 8, 16, 32, 64 channels */
#define AC_BUCKETS 64
#define AC_CAP_KEY (NCCLBPF_NUM_COLLS * AC_BUCKETS) /* entry holding the channel capacity */
#define AC_MIN_SAMPLES 2
#define AC_PROBE_PERIOD 8  /* epochs between neighbour probes */
#define AC_LOG2_EPOCH 6    /* K = 64 collectives */

struct ac_lat {
	__u64 ewma_ns[AC_SLOTS]; /* EWMA (1/4) of the latency at 2^slot channels */
	__u64 count[AC_SLOTS];   /* samples (saturating at 1000) */
	__u64 cap;               /* CAP entry: most channels NCCL ran on this comm */
	__u64 _pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AC_CAP_KEY + 1);
	__type(key, __u32);
	__type(value, struct ac_lat);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, AC_LOG2_EPOCH));
} ac_lat SEC(".maps");

static __always_inline __u32 slot_of(__u32 ch)
{
	__u32 s = 0;
	if (ch >= 64) return 6;
	if (ch >= 32) return 5;
	if (ch >= 16) return 4;
	if (ch >= 8) return 3;
	if (ch >= 4) return 2;
	if (ch >= 2) s = 1;
	return s;
}

SEC("profiler")
int adaptive_channels_record(struct ncclbpf_profiler_ctx *ctx)
{
	if (ctx->coll_type >= NCCLBPF_NUM_COLLS || ctx->size_bucket >= AC_BUCKETS ||
	    ctx->n_channels == 0)
		return 0;
	__u64 lat = ctx->gpu_ns ? ctx->gpu_ns : ctx->host_ns;
	if (lat == 0)
		return 0;
	__u32 key = ctx->coll_type * AC_BUCKETS + ctx->size_bucket;
	struct ac_lat *e = bpf_map_lookup_elem(&ac_lat, &key);
	if (!e)
		return 0;
	__u32 s = slot_of(ctx->n_channels);
	if (e->count[s] == 0)
		e->ewma_ns[s] = lat;
	else
		e->ewma_ns[s] = e->ewma_ns[s] - (e->ewma_ns[s] >> 2) + (lat >> 2);
	if (e->count[s] < 1000)
		e->count[s]++;
	__u32 cap_key = AC_CAP_KEY;
	struct ac_lat *cap = bpf_map_lookup_elem(&ac_lat, &cap_key);
	if (cap && ctx->n_channels > cap->cap)
		cap->cap = ctx->n_channels;
	return 0;
}

/* Why the scan below is branch-free (policy.h "branch-free arithmetic"): written with if's,
 * the size bucket's five halving steps (the bucket is part of the map key) and "keep the
 * faster slot" multiplied into ~4,000 instructions processed and > 1 ms to verify (~2,100
 * with only the bucket branch-free, ~2,800 with only the scan). */

SEC("tuner")
int adaptive_channels(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 bucket = ncclbpf_size_bucket(ctx->n_bytes);
	if (ctx->coll_type >= NCCLBPF_NUM_COLLS || bucket >= AC_BUCKETS)
		return 0;
	__u32 cap_key = AC_CAP_KEY;
	struct ac_lat *capv = bpf_map_lookup_elem(&ac_lat, &cap_key);
	if (!capv || capv->cap == 0)
		return 0; /* nothing agreed yet: NCCL's choice (and its channel count is learned) */
	/* slot_of(min(cap, 64)) = min(floor(log2(cap)), 6), as cap >= 1 here */
	__u32 top = slot_of((__u32)(capv->cap > 64 ? 64 : capv->cap));
	__u32 key = ctx->coll_type * AC_BUCKETS + bucket;
	struct ac_lat *e = bpf_map_lookup_elem(&ac_lat, &key);
	if (!e)
		return 0;
	if (top < 1)
		return 0;
	/* explore: the smallest count (>= 2 channels) without enough samples; else best = the
	 * first slot with the lowest latency (below ~0). A path that returns ends and one that
	 * leaves the loop joins the others; "keep the faster slot" under an if would double
	 * the paths at every slot, so it is branch-free. */
	__u64 best = 0, best_ns = ~0ull;
	for (__u32 s = 1; s < AC_SLOTS; s++) {
		if (s > top)
			break;
		if (e->count[s] < AC_MIN_SAMPLES) {
			ctx->n_channels = 1 << s;
			return 0;
		}
		__u64 ns = e->ewma_ns[s];
		__u64 faster = NCCLBPF_LT(ns, best_ns);
		best_ns = NCCLBPF_SEL(faster, ns, best_ns);
		best = NCCLBPF_SEL(faster, s, best);
	}
	if (best == 0)
		return 0;
	/* periodic neighbour probe, identical on every rank (comm_seq is rank-invariant) */
	__u64 epoch = ctx->comm_seq >> AC_LOG2_EPOCH;
	if (epoch % AC_PROBE_PERIOD == AC_PROBE_PERIOD - 1) {
		if ((epoch / AC_PROBE_PERIOD) & 1) {
			if (best < top)
				best++;
		} else if (best > 1) {
			best--;
		}
	}
	ctx->n_channels = 1 << best;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

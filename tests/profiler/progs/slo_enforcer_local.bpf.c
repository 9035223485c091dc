/* slo_enforcer_local: the rank-local predecessor of policies/slo_enforcer.bpf.c, kept as a
 * test program (rejected with E-RANK-LOCAL unless NCCLBPF_RANK_LOCAL=allow).
 *
 * A latency target per collective type (config map slo_targets, ns; 0 = no
 * target). After every window of 4 samples of a (communicator, collective, size bucket):
 * mean above the target -> escalate one level; mean below 70 % of it -> relax one level.
 * Levels: 0 NCCL's choice; 1 every channel of the communicator; 2 + Ring/LL128 (if NCCL
 * allows it); 3 + Ring/Simple (if allowed).
 * The first call keeps NCCL's choice so the profiler learns the channel count. */
#include <ncclbpf/policy.h>

#define SLO_WINDOW 4
#define SLO_MAX_LEVEL 3
#define SLO_RELAX_PCT 70

NCCLBPF_LATENCY_MAP;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, __u64);
} slo_targets SEC(".maps");

struct slo_state {
	__u64 seen;
	__u64 sum_ns;
	__u32 n;
	__u32 level;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct ncclbpf_latency_key);
	__type(value, struct slo_state);
} slo_state SEC(".maps");

SEC("tuner")
int slo_enforcer_local(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 coll = ctx->coll_type;
	__u64 *target = bpf_map_lookup_elem(&slo_targets, &coll);
	if (!target || *target == 0)
		return 0;
	struct ncclbpf_latency_key key = {};
	key.comm_id = ctx->comm_id;
	key.coll_type = ctx->coll_type;
	key.size_bucket = ncclbpf_size_bucket(ctx->n_bytes);
	struct slo_state *st = bpf_map_lookup_elem(&slo_state, &key);
	if (!st) {
		struct slo_state init = {};
		bpf_map_update_elem(&slo_state, &key, &init, BPF_NOEXIST);
		return 0;
	}
	struct ncclbpf_latency_stats *lat = bpf_map_lookup_elem(&ncclbpf_latency, &key);
	if (lat && lat->count > st->seen) {
		st->seen = lat->count;
		st->sum_ns += lat->last_ns;
		st->n++;
	}
	if (st->n >= SLO_WINDOW) {
		__u64 avg = st->sum_ns / st->n;
		if (avg > *target && st->level < SLO_MAX_LEVEL)
			st->level++;
		else if (avg * 100 < *target * SLO_RELAX_PCT && st->level > 0)
			st->level--;
		st->sum_ns = 0;
		st->n = 0;
	}
	__s32 max = ctx->max_channels ? (__s32)ctx->max_channels : 32;
	if (max > NCCLBPF_MAX_CHANNELS)
		max = NCCLBPF_MAX_CHANNELS;
	__u32 level = st->level;
	if (level == 0)
		return 0;
	ctx->n_channels = max;
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

/* lookup_only: exactly one hash-map lookup per decision and no decision (NCCL's choice
 * stands). Intent: measure the cost of a map lookup on the decision path (benchmark). The
 * map is keyed by (collective, size bucket); lookup_update.bpf.c fills the same layout. */
#include <ncclbpf/policy.h>

struct size_key {
	__u32 coll_type;
	__u32 size_bucket;
};

struct size_stats {
	__u64 calls;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct size_key);
	__type(value, struct size_stats);
} size_stats SEC(".maps");

SEC("tuner")
int lookup_only(struct ncclbpf_tuner_ctx *ctx)
{
	struct size_key key = {
		.coll_type = ctx->coll_type,
		.size_bucket = ncclbpf_size_bucket(ctx->n_bytes),
	};
	struct size_stats *s = bpf_map_lookup_elem(&size_stats, &key);

	return s ? 1 : 0; /* the return value is ignored by the tuner hook */
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

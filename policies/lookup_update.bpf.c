/* lookup_update: one lookup and one update per decision, no decision (NCCL's choice
 * stands). Intent: measure a read-modify-write of map state on the decision path: it keeps
 * a per (collective, size bucket) call and byte count. */
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
int lookup_update(struct ncclbpf_tuner_ctx *ctx)
{
	struct size_key key = {
		.coll_type = ctx->coll_type,
		.size_bucket = ncclbpf_size_bucket(ctx->n_bytes),
	};
	struct size_stats next = { .calls = 1, .bytes = ctx->n_bytes };
	struct size_stats *s = bpf_map_lookup_elem(&size_stats, &key);

	if (s) {
		next.calls = s->calls + 1;
		next.bytes = s->bytes + ctx->n_bytes;
	}
	bpf_map_update_elem(&size_stats, &key, &next, BPF_ANY);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

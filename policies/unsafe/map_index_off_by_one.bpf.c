/* Rejected: the index check uses <= where < is needed: slots[64] is one past the end. */
#include <ncclbpf/policy.h>

struct table { __u64 slots[64]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct table);
} table SEC(".maps");

SEC("tuner") int map_index_off_by_one(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0, i = ctx->n_ranks;
	struct table *t = bpf_map_lookup_elem(&table, &key);
	if (!t || i > 64)
		return 0;
	return t->slots[i]; // EXPECT: E-MAP-VALUE-OOB
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

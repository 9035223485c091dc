/* Rejected: an index from the context is used without any bounds check. */
#include <ncclbpf/policy.h>

struct table { __u64 slots[64]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct table);
} table SEC(".maps");

SEC("tuner") int map_index_unchecked(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	struct table *t = bpf_map_lookup_elem(&table, &key);
	if (!t)
		return 0;
	return t->slots[ctx->coll_type]; // EXPECT: E-MAP-VALUE-OOB
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

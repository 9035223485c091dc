/* Rejected: the first lookup is checked, the second one is not (a check is never
 * carried over to a later lookup, even of the same key). */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") int null_second_lookup(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->comm_id;
	struct val *a = bpf_map_lookup_elem(&stats, &key);
	if (!a)
		return 0;
	key = ctx->seq;
	struct val *b = bpf_map_lookup_elem(&stats, &key);
	return a->count + b->sum; // EXPECT: E-NULL-DEREF
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

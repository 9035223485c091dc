/* Rejected: the lookup result is dereferenced without a NULL check. */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") int null_deref(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->comm_id;
	struct val *v = bpf_map_lookup_elem(&stats, &key);
	return v->count; // EXPECT: E-NULL-DEREF
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: the key buffer is a 4-byte __u32 but the map's key is 8 bytes. */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") int helper_key_short(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = ctx->coll_type;
	struct val *v = bpf_map_lookup_elem(&stats, &key); // EXPECT: E-HELPER-ARG
	return v ? 1 : 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

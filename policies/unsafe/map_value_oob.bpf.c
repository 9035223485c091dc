/* Rejected: reads the third u64 of a 16-byte map value. */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") int map_value_oob(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = 0;
	struct val *v = bpf_map_lookup_elem(&stats, &key);
	if (!v)
		return 0;
	return ((volatile __u64 *)v)[2]; // EXPECT: E-MAP-VALUE-OOB
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: stores a pointer into a map value, where any program could read it. */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") int leak_pointer_to_map(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = 0;
	struct val *v = bpf_map_lookup_elem(&stats, &key);
	if (!v)
		return 0;
	v->sum = (__u64)v; // EXPECT: E-POINTER-LEAK
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

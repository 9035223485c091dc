/* Rejected: BPF_F_RDONLY_PROG forbids deleting as well as updating (as in Linux). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u64);
	__type(value, __u64);
} config SEC(".maps");

SEC("profiler") int readonly_map_delete(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 key = ctx->comm_id;
	bpf_map_delete_elem(&config, &key); // EXPECT: E-READONLY-MAP
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

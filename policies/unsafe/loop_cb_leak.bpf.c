/* Rejected: the callback may not hand a pointer out through its context (it would reach
 * the map, readable from the host and other ranks). */
#include <ncclbpf/policy.h>

struct slot { __u64 v; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct slot);
} slots SEC(".maps");

static int store_address(__u32 i, void *data)
{
	struct slot *s = data;
	s->v = (__u64)data; // EXPECT: E-POINTER-LEAK
	return 0;
}

SEC("profiler") int loop_cb_leak(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 k = 0;
	struct slot *s = bpf_map_lookup_elem(&slots, &k);
	if (!s)
		return 0;
	bpf_loop(2, store_address, s, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

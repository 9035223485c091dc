/* Rejected: the callback indexes its map-value context with the loop index, which runs to
 * 9, past the 4 elements. */
#include <ncclbpf/policy.h>

struct quad { __u64 a[4]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct quad);
} quads SEC(".maps");

static int write_past_end(__u32 i, void *data)
{
	struct quad *q = data;
	q->a[i] = 1; // EXPECT: E-MAP-VALUE-OOB
	return 0;
}

SEC("profiler") int loop_cb_oob(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 k = 0;
	struct quad *q = bpf_map_lookup_elem(&quads, &k);
	if (!q)
		return 0;
	bpf_loop(10, write_past_end, q, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: two map values from different lookups are compared. Where the allocator put
 * them is per-process state: the outcome differs between runs and ranks. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, __u64);
} seen SEC(".maps");

SEC("profiler") int ptr_compare_objects(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 a = ctx->comm_id, b = ctx->seq;
	__u64 *va = bpf_map_lookup_elem(&seen, &a);
	if (!va)
		return 0;
	__u64 *vb = bpf_map_lookup_elem(&seen, &b);
	if (!vb)
		return 0;
	__u64 *first = va < vb ? va : vb; // EXPECT: E-POINTER-CMP
	*first += ctx->n_bytes;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

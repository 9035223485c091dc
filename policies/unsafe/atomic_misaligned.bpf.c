/* Rejected: an 8-byte atomic at offset 60 of a map value crosses a cache line; on hosts
 * with split-lock detection each one traps into the kernel (~1 ms per tuner call). */
#include <ncclbpf/policy.h>

struct counters { __u8 bytes[128]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct counters);
} stats SEC(".maps");

SEC("profiler") int atomic_misaligned(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 key = 0;
	struct counters *c = bpf_map_lookup_elem(&stats, &key);
	if (!c)
		return 0;
	__sync_fetch_and_add((__u64 *)&c->bytes[60], ctx->n_bytes); // EXPECT: E-MISALIGNED
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

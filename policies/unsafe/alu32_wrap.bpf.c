/* Rejected: (x & 7) - 8 computed in 32 bits wraps to 0xfffffff8..0xffffffff, far past
 * the 64 slots, even though x & 7 looks small. */
#include <ncclbpf/policy.h>

struct table { __u64 slots[64]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct table);
} table SEC(".maps");

SEC("tuner") int alu32_wrap(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	struct table *t = bpf_map_lookup_elem(&table, &key);
	if (!t)
		return 0;
	__u32 i = (ctx->n_ranks & 7) - 8;
	return t->slots[i]; // EXPECT: E-MAP-VALUE-OOB
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: the map is declared read-only to programs (BPF_F_RDONLY_PROG). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u32);
	__type(value, __u64);
} config SEC(".maps");
SEC("tuner") int readonly_map_write(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	__u64 *v = bpf_map_lookup_elem(&config, &key);
	if (!v)
		return 0;
	*v = ctx->n_bytes; // EXPECT: E-READONLY-MAP
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

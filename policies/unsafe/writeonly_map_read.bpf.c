/* Rejected: BPF_F_WRONLY_PROG maps may be written by programs, not read. */
#include <ncclbpf/policy.h>

#define BPF_F_WRONLY_PROG (1U << 8)
struct pair { __u64 last, total; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__uint(map_flags, BPF_F_WRONLY_PROG);
	__type(key, __u32);
	__type(value, struct pair);
} out SEC(".maps");

SEC("profiler") int writeonly_map_read(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 key = 1;
	struct pair *v = bpf_map_lookup_elem(&out, &key);
	if (!v)
		return 0;
	v->last = ctx->n_bytes; /* writing is what the flag allows */
	return v->total > 4096; // EXPECT: E-WRITEONLY-MAP
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: a tuner program writes to an agreed map. Tuners read its published view, the
 * bytes every rank activated for this collective; only profiler programs (and the host)
 * contribute to it. A write would make this rank's view differ from the others'. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_SUM, 4));
} agreed SEC(".maps");

SEC("tuner") int agreed_tuner_write(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&agreed, &k);
	if (!v)
		return 0;
	*v = ctx->n_bytes; // EXPECT: E-READONLY-MAP
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

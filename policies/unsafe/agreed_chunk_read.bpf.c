/* Rejected: a tuner/chunk program decides from an agreed map. Only the tuner hook reads the
 * agreed view bound to its collective; getChunkSize runs without that binding, so there an
 * agreed map holds this rank's own contributions (rank-local), and chunk sizes computed from
 * it could differ between ranks. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 4));
} agreed SEC(".maps");

SEC("tuner/chunk") int agreed_chunk_read(struct ncclbpf_chunk_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&agreed, &k);
	if (!v)
		return 0;
	if (*v > 1000)
		ctx->chunk_size = 1 << 20; // EXPECT: E-RANK-LOCAL
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

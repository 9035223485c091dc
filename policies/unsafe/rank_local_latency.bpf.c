/* Rejected: the channel count is decided from the built-in latency map, which each rank's
 * profiler fills with its own timings. Ranks then choose different channel counts for the
 * same collective and the job hangs (adaptive_channels did this to a 2-rank PyTorch job).
 * Accepted with NCCLBPF_RANK_LOCAL=allow, for jobs whose ranks share that state. */
#include <ncclbpf/policy.h>

NCCLBPF_LATENCY_MAP;

SEC("tuner") int rank_local_latency(struct ncclbpf_tuner_ctx *ctx)
{
	struct ncclbpf_latency_key key = {};
	key.comm_id = ctx->comm_id;
	key.coll_type = ctx->coll_type;
	key.size_bucket = ncclbpf_size_bucket(ctx->n_bytes);
	struct ncclbpf_latency_stats *lat = bpf_map_lookup_elem(&ncclbpf_latency, &key);
	if (!lat)
		return 0;
	ctx->n_channels = lat->n_channels_last + 2; // EXPECT: E-RANK-LOCAL
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

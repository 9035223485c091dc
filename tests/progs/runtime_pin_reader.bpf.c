/* Pinned-map sharing (tests/runtime): reads rt_shared written by runtime_pin_writer.bpf.c
 * and the built-in latency map the profiler fills. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rt_shared SEC(".maps");

NCCLBPF_LATENCY_MAP;

/* n_channels = the last GPU time recorded for this communicator (0 = unknown);
 * returns the latency map's sample count for (comm, coll, bucket of n_bytes). */
SEC("tuner")
int read_shared(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->comm_id;
	__u64 *v = bpf_map_lookup_elem(&rt_shared, &key);
	ctx->n_channels = v ? (__s32)*v : 0;
	struct ncclbpf_latency_key lk = {
		.comm_id = ctx->comm_id,
		.coll_type = ctx->coll_type,
		.size_bucket = ncclbpf_size_bucket(ctx->n_bytes),
	};
	struct ncclbpf_latency_stats *s = bpf_map_lookup_elem(&ncclbpf_latency, &lk);
	return s ? (int)s->count : -1;
}

/* Pinned-map sharing (tests/runtime): the profiler side stores each collective's GPU time
 * in a map pinned by name; runtime_pin_reader.bpf.c reads the same map from the tuner. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rt_shared SEC(".maps");

SEC("profiler")
int record(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 key = ctx->comm_id, val = ctx->gpu_ns;
	bpf_map_update_elem(&rt_shared, &key, &val, BPF_ANY);
	return 0;
}

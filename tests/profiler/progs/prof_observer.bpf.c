/* Test profiler program: per collective type, count completions and keep the sum of GPU
 * time, the last byte count and channel count, as an observer would. */
#include <ncclbpf/policy.h>

struct obs {
	__u64 count;
	__u64 gpu_sum;
	__u64 last_bytes;
	__u64 last_seq;
	__u64 last_channels;
	__u64 last_rank;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, NCCLBPF_NUM_COLLS);
	__type(key, __u32);
	__type(value, struct obs);
} prof_obs SEC(".maps");

SEC("profiler")
int observe(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 k = ctx->coll_type;
	struct obs *o = bpf_map_lookup_elem(&prof_obs, &k);
	if (!o)
		return 0;
	o->count++;
	o->gpu_sum += ctx->gpu_ns;
	o->last_bytes = ctx->n_bytes;
	o->last_seq = ctx->seq;
	o->last_channels = ctx->n_channels;
	o->last_rank = ctx->rank;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Runtime end-to-end object (tests/runtime): a hash map, an array map, global data in
 * .rodata/.data/.bss, a static subprogram, and programs for two hooks. The test recomputes
 * every expected value in C. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} calls SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} bytes_per_coll SEC(".maps");

const volatile __u32 channel_base = 3; /* .rodata */
__u64 runs = 7;                        /* .data */
__u64 last_bytes;                      /* .bss */

static __attribute__((noinline)) __u32 pick_channels(__u64 n_bytes)
{
	return n_bytes >= (1 << 20) ? channel_base * 4 : channel_base;
}

/* Counts calls per communicator, sums bytes per collective type, picks ring/simple and a
 * channel count from the size. Returns the number of calls seen on this communicator. */
SEC("tuner")
int pick(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->comm_id, one = 1, n = 1;
	__u64 *cnt = bpf_map_lookup_elem(&calls, &key);
	if (cnt) {
		*cnt += 1;
		n = *cnt;
	} else {
		bpf_map_update_elem(&calls, &key, &one, BPF_ANY);
	}
	__u32 ct = ctx->coll_type;
	__u64 *b = bpf_map_lookup_elem(&bytes_per_coll, &ct);
	if (b)
		*b += ctx->n_bytes;
	runs++;
	last_bytes = ctx->n_bytes;
	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	ctx->n_channels = (__s32)pick_channels(ctx->n_bytes);
	return (int)n;
}

/* Records the GPU time of the last collective in slot 7 of the array map. */
SEC("profiler")
int observe(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 slot = 7;
	__u64 *v = bpf_map_lookup_elem(&bytes_per_coll, &slot);
	if (v)
		*v = ctx->gpu_ns;
	return 0;
}

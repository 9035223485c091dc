/* Control-plane tests (tests/control): a tuner program with state. `counts` slot 0 counts
 * calls (atomic add); the decision depends on the context only (Ring/Simple, 1 channel), so
 * it passes the rank-invariance check. `ctl_maps_v2.bpf.c` declares the same maps: a reload
 * from one to the other keeps their contents. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, __u64);
} notes SEC(".maps");

const volatile __u32 channels = 1; /* .rodata: read-only to the control plane too */

SEC("tuner")
int ctl_v1(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *c = bpf_map_lookup_elem(&counts, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	ctx->n_channels = (__s32)channels;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

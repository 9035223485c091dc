/* Version 2 of ctl_maps.bpf.c (tests/control): same `counts` and `notes` maps (reused on
 * reload: their contents survive), a different decision (Tree/LL, 5 channels) and a map
 * with the name `notes_v2` that only this version has (new on reload). */
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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u32);
} notes_v2 SEC(".maps");

SEC("tuner")
int ctl_v2(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *c = bpf_map_lookup_elem(&counts, &k);
	if (c)
		__sync_fetch_and_add(c, 1);
	ctx->algo = NCCLBPF_ALGO_TREE;
	ctx->proto = NCCLBPF_PROTO_LL;
	ctx->n_channels = 5;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

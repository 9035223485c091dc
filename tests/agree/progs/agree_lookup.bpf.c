/* Benchmark pair (bench/cpu_agree.c): the same tuner decision reading a plain array map
 * and an agreed map (the published view). Both are accepted in strict mode only because
 * the plain map is read-only to programs; the agreed one is rank-invariant by design. */
#include <ncclbpf/policy.h>

struct val {
	__u64 ch;
	__u64 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 320);
	__type(key, __u32);
	__type(value, struct val);
	__uint(map_flags, BPF_F_RDONLY_PROG);
} plain SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 320);
	__type(key, __u32);
	__type(value, struct val);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 6));
} agreed SEC(".maps");

SEC("tuner") int lookup_plain(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type * 64 + ncclbpf_size_bucket(ctx->n_bytes);
	struct val *v = bpf_map_lookup_elem(&plain, &k);
	if (v && v->ch && v->ch <= 64)
		ctx->n_channels = (__s32)v->ch;
	return 0;
}

SEC("tuner") int lookup_agreed(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type * 64 + ncclbpf_size_bucket(ctx->n_bytes);
	struct val *v = bpf_map_lookup_elem(&agreed, &k);
	if (v && v->ch && v->ch <= 64)
		ctx->n_channels = (__s32)v->ch;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

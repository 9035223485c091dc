/* The tuner's decision paths (tuner_core.c, issue 14 "decision-path cost"): which programs a
 * straight-line decision may run. Each sets the same decision from the context only
 * (Ring/Simple above 1 MiB, NCCL's choice below), so the paths can be compared. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 6));
} agreed_zero SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} seen SEC(".maps");

static __attribute__((noinline)) int big(__u64 n)
{
	return n > (1u << 20);
}

/* straight: one JIT call, nothing else */
SEC("tuner") int direct(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes > (1u << 20)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

/* general: a bpf-to-bpf call (the JIT checks the call depth: a fault record per call) */
SEC("tuner") int with_call(struct ncclbpf_tuner_ctx *ctx)
{
	if (big(ctx->n_bytes)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

/* general: reads an agreed map (needs the agreed view bound); version 0 reads as zero */
SEC("tuner") int agreed_read(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(&agreed_zero, &k);
	if (ctx->n_bytes > (1u << 20) + (v ? *v : 0)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

/* straight, inside the thread's epoch too: a hash map (records the last size per
 * collective type; nothing decides from it, so the decision stays rank-invariant) */
SEC("tuner") int with_hash(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type;
	__u64 n = ctx->n_bytes;
	bpf_map_update_elem(&seen, &k, &n, BPF_ANY);
	if (ctx->n_bytes > (1u << 20)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

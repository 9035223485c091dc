/* Registry error paths (tests/runtime): one program the verifier must reject (map value
 * dereferenced without a NULL check), one good program, one in a section naming no hook. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} m SEC(".maps");

SEC("tuner")
int unchecked(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = ctx->coll_type;
	__u32 *v = bpf_map_lookup_elem(&m, &k);
	ctx->n_channels = (__s32)*v; /* possibly NULL */
	return 0;
}

SEC("tuner")
int good(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = 5;
	return 0;
}

SEC("other")
int nohook(struct ncclbpf_tuner_ctx *ctx)
{
	return ctx->n_ranks;
}

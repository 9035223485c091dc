/* bpf_printk through the runtime's logger, and prandom (tests/runtime). */
#include <ncclbpf/policy.h>

SEC("tuner")
int say(struct ncclbpf_tuner_ctx *ctx)
{
	bpf_printk("coll=%u bytes=%llu neg=%d", ctx->coll_type, ctx->n_bytes, -5);
	__u32 r = bpf_get_prandom_u32();
	ctx->n_channels = (__s32)(r & 0xff);
	return 0;
}

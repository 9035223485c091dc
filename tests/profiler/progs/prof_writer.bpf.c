/* Must be rejected: a profiler program may not write its (read-only) context. */
#include <ncclbpf/policy.h>

SEC("profiler")
int scribble(struct ncclbpf_profiler_ctx *ctx)
{
	ctx->gpu_ns = 0;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: profiler contexts are read-only. */
#include <ncclbpf/policy.h>

SEC("profiler") int profiler_write(struct ncclbpf_profiler_ctx *ctx)
{
	ctx->algo = 1; // EXPECT: E-CTX-WRITE
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

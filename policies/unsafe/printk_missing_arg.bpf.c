/* Rejected: the format reads two numbers but only one is passed; the helper would print
 * whatever the register held (host register contents in the log). */
#include <ncclbpf/policy.h>

SEC("profiler") int printk_missing_arg(struct ncclbpf_profiler_ctx *ctx)
{
	static const char fmt[] = "bytes=%llu seq=%llu";
	bpf_trace_printk(fmt, sizeof(fmt), ctx->n_bytes); // EXPECT: E-UNINIT-REG
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

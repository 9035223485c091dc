/* Rejected: bpf_loop's callback must be a function of the program, not a number. */
#include <ncclbpf/policy.h>

SEC("profiler") int loop_cb_not_function(struct ncclbpf_profiler_ctx *ctx)
{
	return bpf_loop(4, (void *)ctx->seq, 0, 0); // EXPECT: E-HELPER-ARG
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

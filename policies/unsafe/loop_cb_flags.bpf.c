/* Rejected: bpf_loop's flags must be 0. */
#include <ncclbpf/policy.h>

static int nothing(__u32 i, void *data)
{
	return 0;
}

SEC("profiler") int loop_cb_flags(struct ncclbpf_profiler_ctx *ctx)
{
	return bpf_loop(4, nothing, 0, 1); // EXPECT: E-HELPER-ARG
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: a bpf_loop callback returns 0 (continue) or 1 (stop), nothing else. */
#include <ncclbpf/policy.h>

static int returns_two(__u32 i, void *data)
{
	return 2; // EXPECT: E-RETURN
}

SEC("profiler") int loop_cb_return(struct ncclbpf_profiler_ctx *ctx)
{
	return bpf_loop(4, returns_two, 0, 0);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

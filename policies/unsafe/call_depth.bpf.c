/* Rejected: unbounded recursion exceeds the call depth limit. */
#include <ncclbpf/policy.h>

static __attribute__((noinline)) int depth(int n)
{
	if (n <= 0)
		return 0;
	int r = depth(n - 1); // EXPECT: E-CALL-DEPTH
	return r > 5 ? r - 5 : r + n;
}
SEC("tuner") int call_depth(struct ncclbpf_tuner_ctx *ctx)
{
	return depth((int)ctx->n_ranks);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

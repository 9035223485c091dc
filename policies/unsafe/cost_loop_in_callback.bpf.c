/* Rejected: bpf_loop(2^23) whose callback runs a 1,000-iteration loop: each call is
 * bounded, but one run executes about 2^23 x 1,000 x 5 instructions, far beyond the
 * profiler's 10^6 per run (E-COST names the bpf_loop call). Loops inside a callback are
 * walked (widening runs in the main frame only): one of 100,000 iterations there is
 * E-BUDGET before its cost is known. */
#include <ncclbpf/policy.h>

struct acc { __u64 sum; };

static int slow(__u32 i, void *data)
{
	struct acc *a = data;
	for (__u32 k = 0; k < 1000; k++)
		a->sum += k ^ i;
	return 0;
}

SEC("profiler") int cost_loop_in_callback(struct ncclbpf_profiler_ctx *ctx)
{
	struct acc a = {};
	bpf_loop(1u << 23, slow, &a, 0); // EXPECT: E-COST
	return a.sum & 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

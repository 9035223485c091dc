/* Rejected: a 20,000-iteration loop around bpf_loop(2^23): one run executes about
 * 20,000 x 2^23 callback runs. At the tuner's default (10^6) the bpf_loop alone is over
 * the limit; test_verifier_cli raises the limit to 10^8 (the bpf_loop alone fits) and the
 * loop around it is what E-COST then names. */
#include <ncclbpf/policy.h>

struct acc { __u64 sum; };

static int add(__u32 i, void *data)
{
	struct acc *a = data;
	a->sum += i;
	return 0;
}

SEC("tuner") int cost_loop_around_bpf_loop(struct ncclbpf_tuner_ctx *ctx)
{
	struct acc a = {};
	for (__u32 k = 0; k < 20000; k++)
		bpf_loop(1u << 23, add, &a, 0); // EXPECT: E-COST
	return a.sum & 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

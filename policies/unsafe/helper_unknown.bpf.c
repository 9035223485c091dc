/* Rejected: helper 99 does not exist in this runtime. */
#include <ncclbpf/policy.h>

static long (*bpf_bogus)(void) = (void *)99;
SEC("tuner") int helper_unknown(struct ncclbpf_tuner_ctx *ctx)
{
	return bpf_bogus(); // EXPECT: E-HELPER-UNKNOWN
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

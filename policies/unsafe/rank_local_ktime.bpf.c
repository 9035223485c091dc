/* Rejected: "alternate algorithms over time" from the rank's own clock. The clocks of two
 * ranks never agree, so they pick different algorithms for the same collective. */
#include <ncclbpf/policy.h>

SEC("tuner") int rank_local_ktime(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	ctx->algo = (now >> 20) & 1; // EXPECT: E-RANK-LOCAL
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

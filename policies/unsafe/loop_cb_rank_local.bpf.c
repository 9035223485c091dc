/* Rejected: the tuner's decision depends on how many iterations ran, and the callback stops
 * on a rank-local value (the clock). */
#include <ncclbpf/policy.h>

struct count { __u64 n; };

static int until_clock(__u32 i, void *data)
{
	struct count *c = data;
	c->n++;
	return bpf_ktime_get_ns() & 1;
}

SEC("tuner") int loop_cb_rank_local(struct ncclbpf_tuner_ctx *ctx)
{
	struct count c = {};
	bpf_loop(8, until_clock, &c, 0);
	ctx->n_channels = c.n; // EXPECT: E-RANK-LOCAL
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

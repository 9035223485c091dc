/* Test program: a net hook that runs for several microseconds (bpf_loop), so that a hot
 * reload racing with it frees the chain while it runs unless the hook path holds an epoch
 * section (test_net_hooks_reload). */
#include <ncclbpf/policy.h>

struct spin { __u64 x; };

static int step(__u32 i, void *data)
{
	struct spin *s = data;
	s->x = s->x * 6364136223846793005ull + 1442695040888963407ull + i;
	return 0;
}

SEC("net")
int net_slow(struct ncclbpf_net_ctx *ctx)
{
	struct spin s = { ctx->bytes };
	bpf_loop(2000, step, &s, 0);
	return s.x == 42;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

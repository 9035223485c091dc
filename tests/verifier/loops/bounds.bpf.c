/* Loops whose bound is data: a register clamped by min(), a mask, a check, a map value;
 * and the bad ones (an unbounded input, a loop that never ends). */
#include "loops.h"

#define MIN(a, b) ((a) < (b) ? (a) : (b))

/* EXPECT: accept 64 5000 */
SEC("profiler") int bound_checked(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 n = ctx->n_ranks;
	if (n > 64)
		n = 64;
	for (__u32 i = 0; i < n; i++)
		BUMP(i);
	return 0;
}

/* EXPECT: accept 32 5000 */
SEC("profiler") int bound_min(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 n = MIN(ctx->n_channels, 32u);
	for (__u32 i = 0; i < n; i++)
		BUMP(i);
	return 0;
}

/* EXPECT: accept 255 20000 */
SEC("profiler") int bound_masked(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 n = ctx->seq & 255;
	for (__u32 i = 0; i < n; i++)
		BUMP(i);
	return 0;
}

/* EXPECT: accept 1000 40000 */
SEC("profiler") int bound_in_register(struct ncclbpf_profiler_ctx *ctx)
{
	/* two inputs: the bound lives in a register compared against the counter */
	__u32 lo = ctx->n_nodes & 15, hi = MIN(ctx->n_ranks, 1000u);
	__u64 sum = 0;
	for (__u32 i = lo; i < hi; i++) {
		__u64 *v = bpf_map_lookup_elem(&counts, &i);
		if (v)
			sum += *v;
	}
	return sum & 1;
}

/* EXPECT: accept 100 10000 */
SEC("profiler") int bound_from_map(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 key = 0;
	struct row *r = bpf_map_lookup_elem(&rows, &key);
	if (!r)
		return 0;
	__u32 n = MIN(r->limit, 100u);
	for (__u32 i = 0; i < n; i++)
		BUMP(i);
	return 0;
}

/* v1/v2 (no 32-bit jumps): the counter is compared through a zero-extended copy, so it is
 * walked, and the unvisited NULL branches of 1000 lookups pile up. */
/* EXPECT(v1): E-BUDGET */
/* EXPECT(v2): E-BUDGET */
/* EXPECT: accept 1000 40000 */
SEC("profiler") int countdown_from_input(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 n = MIN(ctx->size_bucket, 1000u);
	while (n--)
		BUMP(n);
	return 0;
}

/* Never ends for a large input: the bound is not limited. */
/* EXPECT: E-BUDGET */
SEC("profiler") int bound_unchecked(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 n = ctx->n_bytes;
	for (__u64 i = 0; i < n; i++)
		BUMP(i & 1023);
	return 0;
}

/* Steps away from its bound: never ends. */
/* EXPECT: E-INFINITE-LOOP */
SEC("profiler") int never_ends(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 i = 0;
	volatile __u32 step = 0;
	while (i < 1000) {
		BUMP(i);
		i += step;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

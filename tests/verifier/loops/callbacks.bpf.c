/* bpf_loop callbacks, with loops inside them. */
#include "loops.h"

struct acc {
	__u64 sum;
	__u32 hits;
};

static int add_one(__u32 i, void *data)
{
	struct acc *a = data;
	__u32 k = i & 1023;
	__u64 *v = bpf_map_lookup_elem(&counts, &k);
	if (v)
		a->sum += *v;
	return 0;
}

/* EXPECT: accept 1000 40000 */
SEC("profiler") int bpf_loop_1000(struct ncclbpf_profiler_ctx *ctx)
{
	struct acc a = {};
	bpf_loop(1000, add_one, &a, 0);
	return a.sum & 1;
}

static int inner_16(__u32 i, void *data)
{
	struct acc *a = data;
	for (__u32 j = 0; j < 16; j++) {
		__u32 k = (i * 16 + j) & 1023;
		__u64 *v = bpf_map_lookup_elem(&counts, &k);
		if (v && *v)
			a->hits++;
	}
	return 0;
}

/* 100 runs of a 16-iteration loop (regression: E-INFINITE-LOOP - the next round of the
 * callback reached the loop's head in exactly the state the previous round had there,
 * which is bpf_loop's next iteration, not a loop that never ends). */
/* EXPECT: accept 17600 40000 */
SEC("profiler") int bpf_loop_inner_loop(struct ncclbpf_profiler_ctx *ctx)
{
	struct acc a = {};
	bpf_loop(100, inner_16, &a, 0);
	return a.hits;
}

static int spin(__u32 i, void *data)
{
	struct acc *a = data;
	volatile __u32 step = 0;
	for (__u32 j = 0; j < 16; j += step)
		a->hits++;
	return 0;
}

/* A loop in a callback stepping by 0: still found as an infinite loop (v1/v2 count
 * a->hits in a 64-bit register: every iteration's state is new, walked until the budget
 * runs out). */
/* EXPECT(v1): E-BUDGET */
/* EXPECT(v2): E-BUDGET */
/* EXPECT: E-INFINITE-LOOP */
SEC("profiler") int bpf_loop_never_ends(struct ncclbpf_profiler_ctx *ctx)
{
	struct acc a = {};
	bpf_loop(100, spin, &a, 0);
	return a.hits;
}

static int stop_at(__u32 i, void *data)
{
	struct acc *a = data;
	a->hits++;
	return i >= a->sum;
}

/* EXPECT: accept 1000 40000 */
SEC("profiler") int bpf_loop_early_stop(struct ncclbpf_profiler_ctx *ctx)
{
	struct acc a = { .sum = ctx->n_bytes };
	bpf_loop(1000, stop_at, &a, 0);
	return a.hits;
}

static int inner_100k(__u32 i, void *data)
{
	struct acc *a = data;
	for (__u32 j = 0; j < 100000; j++) {
		__u32 k = j & 1023;
		__u64 *v = bpf_map_lookup_elem(&counts, &k);
		if (v)
			a->sum += *v;
	}
	return 0;
}

/* 2^23 calls of a 100,000-iteration loop: far over the profiler's 10^6 instructions. */
/* EXPECT: E-BUDGET */
SEC("profiler") int bpf_loop_huge(struct ncclbpf_profiler_ctx *ctx)
{
	struct acc a = {};
	bpf_loop(1 << 23, inner_100k, &a, 0);
	return a.sum & 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

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

/* KNOWN FALSE REJECTION (issue 24, left): a loop inside a bpf_loop callback is neither
 * widened nor walked right: its head repeats exactly across rounds of the callback. */
/* EXPECT: E-INFINITE-LOOP */
SEC("profiler") int bpf_loop_inner_loop(struct ncclbpf_profiler_ctx *ctx)
{
	struct acc a = {};
	bpf_loop(100, inner_16, &a, 0);
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

/* Loops over data: map value arrays (index and pointer walk), stack arrays (constant and
 * masked indexes), global arrays. */
#include "loops.h"

__u64 hist[64];

/* EXPECT: accept 16 2000 */
SEC("profiler") int map_value_sum(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 key = ctx->coll_type & 3;
	struct row *r = bpf_map_lookup_elem(&rows, &key);
	if (!r)
		return 0;
	__u64 s = 0;
	for (__u32 i = 0; i < 16; i++)
		s += r->a[i];
	return s & 1;
}

/* EXPECT: accept 16 2000 */
SEC("profiler") int map_value_walk(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 key = ctx->coll_type & 3;
	struct row *r = bpf_map_lookup_elem(&rows, &key);
	if (!r)
		return 0;
	__u64 s = 0;
	for (__u64 *p = r->a; p < r->a + 16; p++)
		s ^= *p;
	return s & 1;
}

/* EXPECT: accept 16 2000 */
SEC("profiler") int map_value_search(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 key = 0;
	struct row *r = bpf_map_lookup_elem(&rows, &key);
	if (!r)
		return -1;
	__u32 n = r->n < 16 ? r->n : 16;
	for (__u32 i = 0; i < n; i++)
		if (r->a[i] >= ctx->n_bytes)
			return i;
	return -1;
}

/* EXPECT: accept 16 2000 */
SEC("profiler") int map_value_write(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 key = 1;
	struct row *r = bpf_map_lookup_elem(&rows, &key);
	if (!r)
		return 0;
	for (__u32 i = 0; i < 16; i++)
		r->a[i] = ctx->n_bytes * i;
	return 0;
}

/* EXPECT: accept 16 4000 */
SEC("profiler") int stack_array(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 buf[16];
	for (__u32 i = 0; i < 16; i++)
		buf[i] = ctx->n_bytes >> i;
	__u64 s = 0;
	for (__u32 i = 0; i < 16; i++)
		s += buf[i] * buf[15 - i];
	return s & 1;
}

/* EXPECT: accept 64 4000 */
SEC("profiler") int stack_histogram(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 h[16] = {};
	__u64 x = ctx->n_bytes ^ ctx->seq;
	for (__u32 i = 0; i < 64; i++) {
		h[x & 15]++;
		x = x * 6364136223846793005ull + 1;
	}
	__u32 best = 0;
	for (__u32 i = 1; i < 16; i++)
		if (h[i] > h[best])
			best = i;
	return best;
}

/* EXPECT: accept 64 4000 */
SEC("profiler") int global_array(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u32 i = 0; i < 64; i++)
		hist[i] += ctx->n_bytes >> (i & 31);
	return 0;
}

/* EXPECT: accept 64 4000 */
SEC("profiler") int global_walk(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 s = 0;
	for (__u64 *p = hist; p < hist + 64; p++)
		s += *p;
	return s & 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

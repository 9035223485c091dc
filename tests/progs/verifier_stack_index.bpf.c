/* Variable-offset stack access (issue 24 item 5b): a small array on the stack indexed by a
 * masked or checked input. Accepted by test_verifier_elf like every tests/progs/verifier_
 * object; run by test_verifier_loop in the interpreter, the checked interpreter and the JIT
 * (results as computed there). The out-of-bounds twin is policies/unsafe/stack_index_oob. */
#include <ncclbpf/policy.h>

/* buf[i & 15] read: the table is filled from the input so clang keeps it on the stack */
SEC("profiler") int stack_byte_table(struct ncclbpf_profiler_ctx *ctx)
{
	volatile __u8 buf[16];
	for (int k = 0; k < 16; k++)
		buf[k] = (__u8)(ctx->n_ranks + 3 * k);
	return buf[ctx->n_bytes & 15];
}

/* buf[i & 15] written, then the whole buffer summed: a histogram on the stack */
SEC("profiler") int stack_histogram(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 hist[16] = {};
	__u64 x = ctx->n_bytes;
	for (int k = 0; k < 8; k++) {
		hist[x & 15] += k + 1;
		x >>= 4;
	}
	__u64 sum = 0;
	for (int k = 0; k < 16; k++)
		sum = sum * 3 + hist[k];
	return sum & 0x7fffffff;
}

/* a checked (not masked) index into 8 u64s */
SEC("profiler") int stack_checked_index(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 v[8];
	for (int k = 0; k < 8; k++)
		v[k] = ctx->seq + k * k;
	__u32 i = ctx->size_bucket;
	if (i >= 8)
		return 0;
	v[i] += 100;
	return (v[i] + v[7 - i]) & 0xffff;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

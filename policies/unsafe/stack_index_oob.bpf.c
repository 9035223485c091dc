/* Rejected: buf[i & 31] on a 16-byte stack buffer may reach 16 bytes past it, above the
 * frame pointer (buf[i & 15] is accepted: tests/progs/verifier_stack_index.bpf.c). */
#include <ncclbpf/policy.h>

SEC("profiler") int stack_index_oob(struct ncclbpf_profiler_ctx *ctx)
{
	volatile __u8 buf[16];
	for (int k = 0; k < 16; k++)
		buf[k] = (__u8)k;
	return buf[ctx->n_bytes & 31]; // EXPECT: E-STACK-OOB
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: an address decides the tuner output. Comparing the context pointer with a
 * number reveals address bits, which differ per process (and therefore per rank): ranks
 * would choose different algorithms and deadlock, and the address could be rebuilt bit
 * by bit. Only NULL checks and comparisons of pointers into one object are allowed. */
#include <ncclbpf/policy.h>

SEC("tuner") int ptr_compare_leak(struct ncclbpf_tuner_ctx *ctx)
{
	if ((unsigned long)ctx > 0x7f0000000000UL) // EXPECT: E-POINTER-CMP
		ctx->n_channels = 2;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* First of a chain: Ring / Simple on 4 channels. */
#include <ncclbpf/policy.h>

/* clang -O2 merges adjacent constant stores (proto + n_channels -> one 8-byte store at
 * offset 144), which the verifier currently rejects as straddling two fields; a compiler
 * barrier keeps the stores separate so these tests exercise the shim, not that limitation. */
#define SEPARATE_STORES() __asm__ volatile("" ::: "memory")

SEC("tuner") int compose_first(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_RING;
	SEPARATE_STORES();
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	SEPARATE_STORES();
	ctx->n_channels = 4;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Faults at run time: decides Tree/LL/3 channels, then calls a helper id that has no
 * implementation. Rejected by the verifier; the tests load it with NCCLBPF_VERIFY=warn to
 * check that a faulting program's writes are discarded. */
#include <ncclbpf/policy.h>

/* clang -O2 merges adjacent constant stores (proto + n_channels -> one 8-byte store at
 * offset 144), which the verifier currently rejects as straddling two fields; a compiler
 * barrier keeps the stores separate so these tests exercise the shim, not that limitation. */
#define SEPARATE_STORES() __asm__ volatile("" ::: "memory")

static long (*no_such_helper)(void) = (void *)200;

SEC("tuner") int fault_after_write(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_TREE;
	SEPARATE_STORES();
	ctx->proto = NCCLBPF_PROTO_LL;
	SEPARATE_STORES();
	ctx->n_channels = 3;
	no_such_helper();
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

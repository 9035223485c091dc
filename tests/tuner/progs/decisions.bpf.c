/* Tuner programs exercising each translation rule; tests pick one with
 * NCCLBPF_POLICY=decisions.bpf.o:<program>. */
#include <ncclbpf/policy.h>

/* clang -O2 merges adjacent constant stores (proto + n_channels -> one 8-byte store at
 * offset 144), which the verifier currently rejects as straddling two fields; a compiler
 * barrier keeps the stores separate so these tests exercise the shim, not that limitation. */
#define SEPARATE_STORES() __asm__ volatile("" ::: "memory")

SEC("tuner") int ask_nvls(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_NVLS;
	SEPARATE_STORES();
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	SEPARATE_STORES();
	ctx->n_channels = 5;
	return 0;
}

SEC("tuner") int algo_only_tree(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_TREE;
	SEPARATE_STORES();
	return 0;
}

SEC("tuner") int proto_only_ll128(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->proto = NCCLBPF_PROTO_LL128;
	SEPARATE_STORES();
	return 0;
}

SEC("tuner") int channels_huge(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = 200;
	return 0;
}

SEC("tuner") int channels_negative(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_RING;
	SEPARATE_STORES();
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	SEPARATE_STORES();
	ctx->n_channels = -3;
	return 0;
}

SEC("tuner") int bad_algo(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = 9;
	SEPARATE_STORES();
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	SEPARATE_STORES();
	ctx->n_channels = 2;
	return 0;
}

/* Echoes inputs through the outputs so the test can check what the shim passed in:
 * n_channels = abi_version * 8 + (coll_type + 1), when seq < 50. */
SEC("tuner") int echo_inputs(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->seq < 50)
		ctx->n_channels = (__s32)(ctx->abi_version * 8 + ctx->coll_type + 1);
	return 0;
}

/* Decision taken from the bits of n_bytes, so a test can drive every (valid and invalid)
 * request: algo -2..13, proto -2..5, n_channels -20..235. */
SEC("tuner") int from_bytes(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;

	ctx->algo = (__s32)(n & 0xf) - 2;
	SEPARATE_STORES();
	ctx->proto = (__s32)((n >> 4) & 0x7) - 2;
	SEPARATE_STORES();
	ctx->n_channels = (__s32)((n >> 8) & 0xff) - 20;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

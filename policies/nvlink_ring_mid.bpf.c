/* nvlink_ring_mid: the reference prototype's headline B300 policy (nvlink_ring_mid_v2).
 * On a single NVLink domain NCCL picks NVLS at every size; Ring wins in the middle range:
 *   4 MiB .. 32 MiB    Ring / LL128
 *   64 MiB .. 192 MiB  Ring / Simple
 *   anything else      NCCL's choice (including the 32-64 MiB gap)
 * Channels are left to NCCL. */
#include <ncclbpf/policy.h>

#define MiB (1024ull * 1024ull)

SEC("tuner")
int nvlink_ring_mid(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;

	if (n >= 4 * MiB && n <= 32 * MiB) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_LL128;
	} else if (n >= 64 * MiB && n <= 192 * MiB) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

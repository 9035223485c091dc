/* size_aware: a fixed size-based schedule, the reference prototype's size_aware_v2 without
 * its 10-channel case.
 *   algorithm: Tree for AllReduce up to 32 KiB, Ring otherwise
 *   protocol:  Simple below 4 KiB, LL below 1 MiB, Simple from 1 MiB
 *   channels:  2 below 4 KiB, 4 below 1 MiB, 8 from 1 MiB
 * Requests NCCL marked unavailable (e.g. Tree on a single rank) leave NCCL's choice. */
#include <ncclbpf/policy.h>

SEC("tuner")
int size_aware(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;

	if (ctx->coll_type == NCCLBPF_COLL_ALLREDUCE && n <= 32 * 1024)
		ctx->algo = NCCLBPF_ALGO_TREE;
	else
		ctx->algo = NCCLBPF_ALGO_RING;

	if (n < 4 * 1024) {
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		ctx->n_channels = 2;
	} else if (n < 1024 * 1024) {
		ctx->proto = NCCLBPF_PROTO_LL;
		ctx->n_channels = 4;
	} else {
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		ctx->n_channels = 8;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

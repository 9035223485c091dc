/* Two tuner programs for the provenance tests (tests/obs/test_provenance.c): `first`
 * decides collectives of 1 MiB and more (Ring/Simple), `second` the 64 KiB..1 MiB band
 * (4 channels); both keep NCCL's choice below 64 KiB. So a decision names the program that
 * made it, and a kept one is NCCL's (pinned). */
#include <ncclbpf/policy.h>

SEC("tuner")
int first(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes >= (1u << 20)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

SEC("tuner")
int second(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes >= (64u << 10) && ctx->n_bytes < (1u << 20))
		ctx->n_channels = 4;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

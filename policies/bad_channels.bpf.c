/* bad_channels: forces every collective onto 1 channel and decides nothing else. It is
 * legal (the verifier accepts it, the shim applies it) and harmful: on an 8-GPU NVLink node
 * it costs most of the bandwidth of large collectives. Proof that policies have real
 * control; never ship it to a job. */
#include <ncclbpf/policy.h>

SEC("tuner")
int bad_channels(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

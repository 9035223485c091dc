/* noop: attaches to the tuner hook and decides nothing, so NCCL's own choice stands.
 * Intent: measure the fixed cost of the plugin + one policy call (decision benchmark). */
#include <ncclbpf/policy.h>

SEC("tuner")
int noop(struct ncclbpf_tuner_ctx *ctx)
{
	(void)ctx;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

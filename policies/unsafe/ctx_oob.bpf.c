/* Rejected: reads past the end of the 192-byte tuner context. */
#include <ncclbpf/policy.h>

SEC("tuner") int ctx_oob(struct ncclbpf_tuner_ctx *ctx)
{
	return ((__u32 *)ctx)[48]; // EXPECT: E-CTX-ACCESS
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

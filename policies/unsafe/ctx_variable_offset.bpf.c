/* Rejected: the context pointer is moved by a variable amount. */
#include <ncclbpf/policy.h>

SEC("tuner") int ctx_variable_offset(struct ncclbpf_tuner_ctx *ctx)
{
	unsigned char *p = (unsigned char *)ctx;
	__u32 i = ctx->coll_type & 7;
	return *(volatile unsigned char *)(p + i); // EXPECT: E-POINTER-ARITH
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

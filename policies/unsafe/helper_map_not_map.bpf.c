/* Rejected: the context is passed where a map is expected. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int helper_map_not_map(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r2 = 0; *(u64 *)(r10 - 8) = r2; r2 = r10; r2 += -8;");
	asm volatile("call 1;"); // EXPECT: E-HELPER-ARG
	asm volatile("r0 = 0; exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

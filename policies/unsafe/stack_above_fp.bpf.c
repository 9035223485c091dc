/* Rejected: writes above the frame pointer (outside the frame). */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int stack_above_fp(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r1 = 0;");
	asm volatile("*(u64 *)(r10 + 8) = r1;"); // EXPECT: E-STACK-OOB
	asm volatile("r0 = 0; exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

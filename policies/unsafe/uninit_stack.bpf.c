/* Rejected: reads 8 stack bytes of which only 4 were written. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int uninit_stack(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r1 = 0; *(u32 *)(r10 - 8) = r1;");
	asm volatile("r0 = *(u64 *)(r10 - 8);"); // EXPECT: E-UNINIT-STACK
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

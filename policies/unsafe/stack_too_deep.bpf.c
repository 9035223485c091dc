/* Rejected: a store 520 bytes below the frame pointer: beyond the 512-byte frame. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int stack_too_deep(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r1 = 0;");
	asm volatile("*(u64 *)(r10 - 520) = r1;"); // EXPECT: E-STACK-LIMIT
	asm volatile("r0 = 0; exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

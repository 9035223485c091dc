/* Rejected: a jump into the second half of a 64-bit immediate load. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int jump_into_lddw(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = *(u32 *)(r1 + 24);");
	asm volatile("if r0 == 0 goto +1;"); // EXPECT: E-BAD-JUMP
	asm volatile("r0 = 0x100000000 ll;");
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

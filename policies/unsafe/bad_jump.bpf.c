/* Rejected: a jump 100 instructions past the end of the program. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int bad_jump(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = 0;");
	asm volatile("goto +100;"); // EXPECT: E-BAD-JUMP
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

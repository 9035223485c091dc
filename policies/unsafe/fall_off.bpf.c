/* Rejected: the last instruction is not an exit: execution runs off the end. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int fall_off(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = *(u32 *)(r1 + 24);");
	asm volatile("if r0 == 0 goto +1;");
	asm volatile("exit;");
	asm volatile("r0 = 1;"); // EXPECT: E-FALL-OFF
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

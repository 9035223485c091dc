/* Rejected: modulo by the constant 0. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int mod_by_zero_imm(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = *(u32 *)(r1 + 28);");
	asm volatile(".quad 0x97; /* r0 %= 0 */"); // EXPECT: E-DIV-ZERO
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: the divisor is 0 on exactly one path (n_nodes <= 1). */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int div_zero_one_path(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r2 = 4; r3 = *(u32 *)(r1 + 32);");
	asm volatile("if r3 > 1 goto +1;");
	asm volatile("r2 = 0;");
	asm volatile("r0 = *(u32 *)(r1 + 28);");
	asm volatile("r0 /= r2;"); // EXPECT: E-DIV-ZERO
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: a stack buffer indexed by a variable (index arrays in map values). */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int stack_var_offset(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r2 = *(u32 *)(r1 + 24); r2 &= 7; r3 = r10;");
	asm volatile("r3 += r2;"); // EXPECT: E-STACK-OOB
	asm volatile("r0 = *(u8 *)(r3 - 8); exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

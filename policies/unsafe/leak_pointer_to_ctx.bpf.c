/* Rejected: writes a stack address into the tuner decision. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int leak_pointer_to_ctx(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r2 = r10;");
	asm volatile("*(u32 *)(r1 + 140) = r2;"); // EXPECT: E-POINTER-LEAK
	asm volatile("r0 = 0; exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

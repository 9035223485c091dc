/* Rejected: buf[i & 7] on an 8-byte stack buffer that was never written (the index is in
 * range, so the offset itself is accepted; every byte it may read must be initialised). */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int stack_var_offset(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r2 = *(u32 *)(r1 + 24); r2 &= 7; r3 = r10;");
	asm volatile("r3 += r2;");
	asm volatile("r0 = *(u8 *)(r3 - 8); exit;"); // EXPECT: E-UNINIT-STACK
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

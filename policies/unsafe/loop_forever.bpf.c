/* Rejected: a loop that never changes its state. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int loop_forever(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = *(u32 *)(r1 + 24);");
	asm volatile("if r0 == 0 goto +1;");
	asm volatile("goto -1;"); // EXPECT: E-INFINITE-LOOP
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: code after an unconditional exit can never run. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int unreachable(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = 0; exit;");
	asm volatile("r0 = 1;"); // EXPECT: E-UNREACHABLE
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: r3 is read before anything was written to it. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int uninit_reg(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = r3;"); // EXPECT: E-UNINIT-REG
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: the program returns without setting r0. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int return_uninit(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r2 = 1;");
	asm volatile("exit;"); // EXPECT: E-RETURN
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

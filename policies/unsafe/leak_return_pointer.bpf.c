/* Rejected: returns the context pointer. */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int leak_return_pointer(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = r1;");
	asm volatile("exit;"); // EXPECT: E-POINTER-LEAK
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

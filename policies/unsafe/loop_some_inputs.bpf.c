/* Rejected: terminates only for even inputs <= 10 (x += 2 until x == 10). */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int loop_some_inputs(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("w0 = *(u32 *)(r1 + 28);");
	asm volatile("w0 += 2;");
	asm volatile("if w0 != 10 goto -2;"); // EXPECT: E-INFINITE-LOOP
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

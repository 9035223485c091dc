/* Rejected: opcode 0xff is not an eBPF instruction (raw bytes). */
#include <ncclbpf/policy.h>

SEC("tuner") __attribute__((naked)) int bad_opcode(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = 0;");
	asm volatile(".quad 0xff;"); // EXPECT: E-BAD-INSN
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

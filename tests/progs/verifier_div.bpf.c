/* Division and modulo by a divisor that may be zero: accepted, as in Linux and RFC 9669
 * (x / 0 = 0, x % 0 = x, the same in the interpreter, the checked interpreter and the
 * JIT), with a warning W-DIV-ZERO at every line marked "WARN:" (test_verifier_elf checks
 * the lines; test_verifier_loop runs them). Return values assume the inputs the tests give:
 * n_ranks = 8, n_nodes = 0 unless said otherwise. */
#include <ncclbpf/policy.h>

/* n_nodes may be 0: 8 / 0 = 0 */
SEC("tuner") int div_by_input(struct ncclbpf_tuner_ctx *ctx)
{
	return ctx->n_ranks / ctx->n_nodes; // WARN: W-DIV-ZERO
}

/* the divisor is 0 on exactly one path (n_nodes <= 1) */
SEC("tuner") __attribute__((naked)) int div_zero_one_path(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r2 = 4; r3 = *(u32 *)(r1 + 32);");
	asm volatile("if r3 > 1 goto +1;");
	asm volatile("r2 = 0;");
	asm volatile("r0 = *(u32 *)(r1 + 28);");
	asm volatile("r0 /= r2;"); // WARN: W-DIV-ZERO
	asm volatile("exit;");
}

/* modulo by the constant 0 leaves the dividend: 8 */
SEC("tuner") __attribute__((naked)) int mod_by_zero_imm(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r0 = *(u32 *)(r1 + 28);");
	asm volatile(".quad 0x97; /* r0 %= 0 */"); // WARN: W-DIV-ZERO
	asm volatile("exit;");
}

/* 32-bit modulo by a register whose low half may be 0: (8 + 2^32) % n_nodes (w) */
SEC("tuner") int mod32_by_input(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 a = ctx->n_ranks, b = ctx->n_nodes;
	return a % b; // WARN: W-DIV-ZERO
}

/* a checked divisor: no warning */
SEC("tuner") int div_checked(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 d = ctx->n_nodes;
	if (d == 0)
		return 1000;
	return ctx->n_ranks / d;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

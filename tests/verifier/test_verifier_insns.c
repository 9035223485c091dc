/* Verifier unit tests on hand-built instruction arrays: every rejection class with its
 * stable code and instruction, and the acceptances that must keep working. */
#include <stdlib.h>

#include "insn_macros.h"
#include "test_util.h"
#include "verifier/verifier.h"

static const struct nb_map_def maps[] = {
	{ .name = "stats", .origin = NB_MAP_ORIGIN_BTF, .type = 1, .key_size = 8, .value_size = 16, .max_entries = 16 },
	{ .name = "arr", .origin = NB_MAP_ORIGIN_BTF, .type = 2, .key_size = 4, .value_size = 512, .max_entries = 4 },
	{ .name = ".rodata", .origin = NB_MAP_ORIGIN_RODATA, .type = 2, .key_size = 4, .value_size = 16, .max_entries = 1 },
};

static struct nb_verifier_stats last_stats;
static struct nb_verifier_diag last_diag;
static struct nb_verifier_warnings last_warns;

static int verify_hook(enum nb_hook_type h, const struct bpf_insn *insns, size_t n, uint64_t budget)
{
	struct nb_program prog = { .name = "t", .insns = (struct bpf_insn *)insns, .insn_cnt = n,
				   .main_insn_cnt = n };
	struct nb_verifier_opts opts = { .budget = budget, .warnings = &last_warns };
	int err = verifier_check(&prog, maps, 3, hook_desc(h), &opts, &last_diag, &last_stats);
	if (err == 0)
		return 0;
	if (err != -13)
		return -1000 + err;
	return (int)last_diag.code;
}

/* expect code (0 = accepted) and, for rejections, the instruction index (-1 = any) */
#define EXPECT_H(h, code, at, ...)                                                          \
	do {                                                                                \
		const struct bpf_insn p_[] = { __VA_ARGS__ };                               \
		int c_ = verify_hook(h, p_, sizeof(p_) / sizeof(p_[0]), 20000);            \
		test_checks++;                                                              \
		if (c_ != (int)(code) || (c_ && (at) >= 0 && last_diag.insn != (size_t)(at))) { \
			test_failures++;                                                    \
			fprintf(stderr, "%s:%d: expected %s at %d, got %s at %zu: %s\n", __FILE__, \
				__LINE__, verifier_err_code(code), at,                      \
				c_ >= 0 ? verifier_err_code((enum nb_verr)c_) : "internal error", \
				last_diag.insn, last_diag.msg);                             \
		}                                                                           \
	} while (0)
#define EXPECT(code, at, ...) EXPECT_H(NB_HOOK_TUNER, code, at, __VA_ARGS__)
#define OK(...) EXPECT(NB_VERR_OK, -1, __VA_ARGS__)

#define LOOKUP0                                                                             \
	ST(BPF_DW, 10, -8, 0), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8), LD_MAP(1, 0), CALL(1)
#define LOOKUP1                                                                             \
	ST(BPF_W, 10, -4, 0), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -4), LD_MAP(1, 1), CALL(1)

static void test_accept(void)
{
	OK(MOV64_IMM(0, 0), EXIT());
	/* read inputs, write outputs */
	OK(LDX(BPF_DW, 2, 1, 8), LDX(BPF_W, 3, 1, 24), LDX(BPF_B, 4, 1, 25), LDX(BPF_H, 4, 1, 26),
	   LDX(BPF_W, 5, 1, 56 + 4 * 20), LDX(BPF_DW, 5, 1, 56 + 8 * 5),
	   ST(BPF_W, 1, 140, 1), STX(BPF_W, 1, 3, 144), ST(BPF_W, 1, 148, 8), MOV64_IMM(0, 0), EXIT());
	/* lookup, NULL check, dereference (6 slots of lookup) */
	OK(LOOKUP0, JMP_IMM(BPF_JEQ, 0, 0, 2), LDX(BPF_DW, 3, 0, 8), STX(BPF_DW, 0, 3, 0),
	   MOV64_IMM(0, 0), EXIT());
	/* NULL check on a copy, dereference of the original */
	OK(LOOKUP0, MOV64_REG(6, 0), JMP_IMM(BPF_JEQ, 6, 0, 1), LDX(BPF_DW, 3, 0, 8),
	   MOV64_IMM(0, 0), EXIT());
	/* NULL check through a spilled copy */
	OK(LOOKUP0, STX(BPF_DW, 10, 0, -16), LDX(BPF_DW, 7, 10, -16), JMP_IMM(BPF_JNE, 7, 0, 2),
	   MOV64_IMM(0, 0), EXIT(), LDX(BPF_DW, 3, 0, 0), MOV64_IMM(0, 0), EXIT());
	/* bounded variable offset into an array value after a range check */
	OK(LDX(BPF_W, 6, 1, 24), LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 5), JMP_IMM(BPF_JGT, 6, 63, 4),
	   ALU64_IMM(BPF_LSH, 6, 3), ALU64_REG(BPF_ADD, 0, 6), LDX(BPF_DW, 3, 0, 0),
	   MOV64_IMM(0, 0), MOV64_IMM(0, 0), EXIT());
	/* 32-bit masking bounds the index */
	OK(LDX(BPF_W, 6, 1, 28), LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 4), ALU32_IMM(BPF_AND, 6, 63),
	   ALU64_IMM(BPF_LSH, 6, 3), ALU64_REG(BPF_ADD, 0, 6), STX(BPF_DW, 0, 6, 0),
	   MOV64_IMM(0, 0), EXIT());
	/* 32-bit compare bounds a zero-extended value */
	OK(LDX(BPF_W, 6, 1, 28), LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 4), JMP32_IMM(BPF_JGT, 6, 63, 3),
	   ALU64_IMM(BPF_LSH, 6, 3), ALU64_REG(BPF_ADD, 0, 6), STX(BPF_DW, 0, 6, 0),
	   MOV64_IMM(0, 0), EXIT());
	/* a loop over 64 array elements: sum = sum + a[i] */
	OK(LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 10), MOV64_IMM(6, 0), MOV64_IMM(7, 0),
	   MOV64_REG(2, 6), ALU64_IMM(BPF_LSH, 2, 3), MOV64_REG(3, 0), ALU64_REG(BPF_ADD, 3, 2),
	   LDX(BPF_DW, 3, 3, 0), ALU64_REG(BPF_ADD, 7, 3), ALU64_IMM(BPF_ADD, 6, 1),
	   JMP_IMM(BPF_JLT, 6, 64, -8), MOV64_IMM(0, 0), EXIT());
	/* arg-min over 16 cost entries of the context with a data-dependent branch per step:
	 * exponential without precision-aware pruning */
	OK(MOV64_REG(9, 1), MOV64_IMM(6, 0), MOV64_IMM(7, -1), MOV64_IMM(8, 0),
	   /* 4: loop */ MOV64_REG(2, 9), MOV64_REG(3, 6), ALU64_IMM(BPF_LSH, 3, 2),
	   ALU64_IMM(BPF_AND, 3, 63), ALU64_REG(BPF_ADD, 2, 3), LDX(BPF_W, 4, 2, 56),
	   JMP_REG(BPF_JGE, 4, 7, 2), MOV64_REG(7, 4), MOV64_REG(8, 6),
	   /* 13 */ ALU64_IMM(BPF_ADD, 6, 1), JMP_IMM(BPF_JLT, 6, 16, -11),
	   STX(BPF_W, 9, 8, 140), MOV64_IMM(0, 0), EXIT());
	CHECK(last_stats.states_pruned > 0);
	CHECK(last_stats.insns_processed < 5000);
	/* bpf-to-bpf call */
	OK(MOV64_IMM(1, 5), CALL_LOCAL(2), ALU64_IMM(BPF_ADD, 0, 1), EXIT(),
	   MOV64_REG(0, 1), ALU64_IMM(BPF_MUL, 0, 3), EXIT());
	/* division by a value proven non-zero */
	OK(LDX(BPF_W, 2, 1, 28), JMP_IMM(BPF_JEQ, 2, 0, 3), MOV64_IMM(0, 100),
	   ALU64_REG(BPF_DIV, 0, 2), EXIT(), MOV64_IMM(0, 0), EXIT());
	/* branch at insn 0 explores both sides */
	OK(JMP_IMM(BPF_JEQ, 1, 0, 1), MOV64_IMM(0, 1), MOV64_IMM(0, 0), EXIT());
	/* global data pointer and bpf_trace_printk */
	OK(LD_MAP_VALUE(1, 2, 0), MOV64_IMM(2, 16), MOV64_IMM(3, 0), MOV64_IMM(4, 0),
	   MOV64_IMM(5, 0), CALL(6), MOV64_IMM(0, 0), EXIT());
	/* update with key and value on the stack */
	OK(ST(BPF_DW, 10, -8, 1), ST(BPF_DW, 10, -16, 2), ST(BPF_DW, 10, -24, 3), LD_MAP(1, 0),
	   MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8), MOV64_REG(3, 10), ALU64_IMM(BPF_ADD, 3, -24),
	   MOV64_IMM(4, 0), CALL(2), MOV64_IMM(0, 0), EXIT());
	/* a loop that terminates for every input (bounded by masking) */
	OK(LDX(BPF_W, 6, 1, 28), ALU64_IMM(BPF_AND, 6, 15), ALU64_IMM(BPF_ADD, 6, -1),
	   JMP_IMM(BPF_JSGT, 6, 0, -2), MOV64_IMM(0, 0), EXIT());
	/* atomic add to a map value */
	OK(LOOKUP0, JMP_IMM(BPF_JEQ, 0, 0, 2), MOV64_IMM(3, 1),
	   INSN(BPF_STX | BPF_ATOMIC | BPF_DW, 0, 3, 8, BPF_ADD), MOV64_IMM(0, 0), EXIT());
}

static void test_null(void)
{
	EXPECT(NB_VERR_NULL_DEREF, 6, LOOKUP0, LDX(BPF_DW, 3, 0, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_NULL_DEREF, 7, LOOKUP0, MOV64_REG(6, 0), LDX(BPF_DW, 3, 6, 0),
	       MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_NULL_DEREF, 8, LOOKUP0, STX(BPF_DW, 10, 0, -16), LDX(BPF_DW, 7, 10, -16),
	       STX(BPF_DW, 7, 7, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_NULL_ARITH, 6, LOOKUP0, ALU64_IMM(BPF_ADD, 0, 8), JMP_IMM(BPF_JEQ, 0, 0, 1),
	       LDX(BPF_DW, 3, 0, 0), MOV64_IMM(0, 0), EXIT());
	/* the check of a first lookup says nothing about a second one */
	EXPECT(NB_VERR_NULL_DEREF, 13, LOOKUP0, JMP_IMM(BPF_JEQ, 0, 0, 9), MOV64_REG(6, 0),
	       MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8), LD_MAP(1, 0), CALL(1),
	       LDX(BPF_DW, 3, 0, 0), MOV64_IMM(0, 0), EXIT(), MOV64_IMM(0, 0), EXIT());
	/* checking a copy made before a re-lookup does not cover the new result */
	EXPECT(NB_VERR_NULL_DEREF, -1, LOOKUP0, MOV64_REG(6, 0), MOV64_REG(2, 10),
	       ALU64_IMM(BPF_ADD, 2, -8), LD_MAP(1, 0), CALL(1), JMP_IMM(BPF_JEQ, 6, 0, 1),
	       LDX(BPF_DW, 3, 0, 0), MOV64_IMM(0, 0), EXIT());
	/* passing the unchecked result to a helper */
	EXPECT(NB_VERR_NULL_DEREF, 9, LOOKUP0, MOV64_REG(2, 0), LD_MAP(1, 0), CALL(3),
	       MOV64_IMM(0, 0), EXIT());
}

static void test_ctx(void)
{
	EXPECT(NB_VERR_CTX_ACCESS, 0, LDX(BPF_W, 0, 1, 192), EXIT());
	EXPECT(NB_VERR_CTX_ACCESS, 0, LDX(BPF_W, 0, 1, 188), EXIT());   /* padding */
	EXPECT(NB_VERR_CTX_ACCESS, 0, LDX(BPF_W, 0, 1, -4), EXIT());
	EXPECT(NB_VERR_CTX_ACCESS, 0, LDX(BPF_W, 0, 1, 10), EXIT());    /* misaligned */
	EXPECT(NB_VERR_CTX_ACCESS, 0, LDX(BPF_DW, 0, 1, 24), EXIT());   /* wider than coll_type */
	/* clang -O2 merges adjacent stores: a store that exactly covers whole adjacent writable
	 * fields is accepted (regression: `ctx->proto = P; ctx->n_channels = N;` compiled to
	 * one 8-byte store at 144 was rejected) */
	EXPECT(NB_VERR_CTX_ACCESS, 0, LDX(BPF_DW, 0, 1, 144), EXIT());  /* reads stay strict */
	EXPECT(NB_VERR_CTX_ACCESS, 0, LDX(BPF_DW, 0, 1, 136), EXIT());  /* tail of cost + algo */
	OK(ST(BPF_DW, 1, 144, 0), MOV64_IMM(0, 0), EXIT());              /* proto + n_channels */
	EXPECT(NB_VERR_CTX_ACCESS, 0, ST(BPF_DW, 1, 140, 0), MOV64_IMM(0, 0), EXIT()); /* misaligned */
	EXPECT(NB_VERR_CTX_ACCESS, 0, ST(BPF_DW, 1, 148, 0), MOV64_IMM(0, 0), EXIT()); /* + padding */
	EXPECT_H(NB_HOOK_PROFILER, NB_VERR_CTX_WRITE, 0, ST(BPF_DW, 1, 48, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 0, STX(BPF_DW, 1, 10, 144), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_CTX_WRITE, 0, ST(BPF_DW, 1, 152, 0), MOV64_IMM(0, 0), EXIT()); /* comm_seq: input */
	OK(LDX(BPF_DW, 0, 1, 152), EXIT());                                   /* comm_seq readable */
	EXPECT(NB_VERR_CTX_WRITE, 0, ST(BPF_DW, 1, 8, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_CTX_WRITE, 0, ST(BPF_W, 1, 56, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_CTX_ACCESS, 0, ST(BPF_H, 1, 140, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 0, STX(BPF_W, 1, 1, 140), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_POINTER_ARITH, 1, LDX(BPF_W, 2, 1, 24), ALU64_REG(BPF_ADD, 1, 2),
	       LDX(BPF_W, 0, 1, 0), EXIT());
	EXPECT(NB_VERR_POINTER_ARITH, 0, ALU64_IMM(BPF_MUL, 1, 2), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_POINTER_ARITH, 0, ALU32_IMM(BPF_ADD, 1, 2), MOV64_IMM(0, 0), EXIT());
	/* every hook: read-only fields reject writes, writable fields accept them */
	EXPECT_H(NB_HOOK_TUNER_CHUNK, NB_VERR_OK, -1, ST(BPF_DW, 1, 32, 4096), MOV64_IMM(0, 0), EXIT());
	EXPECT_H(NB_HOOK_TUNER_CHUNK, NB_VERR_CTX_WRITE, 0, ST(BPF_W, 1, 20, 1), MOV64_IMM(0, 0), EXIT());
	EXPECT_H(NB_HOOK_PROFILER, NB_VERR_CTX_WRITE, 0, ST(BPF_W, 1, 52, 1), MOV64_IMM(0, 0), EXIT());
	EXPECT_H(NB_HOOK_PROFILER, NB_VERR_OK, -1, LDX(BPF_W, 0, 1, 76), EXIT());
	EXPECT_H(NB_HOOK_NET, NB_VERR_OK, -1, ST(BPF_W, 1, 40, 1), MOV64_IMM(0, 0), EXIT());
	EXPECT_H(NB_HOOK_NET, NB_VERR_CTX_ACCESS, 0, LDX(BPF_W, 0, 1, 44), EXIT());
	EXPECT_H(NB_HOOK_ENV, NB_VERR_OK, -1, LDX(BPF_B, 0, 1, 63), ST(BPF_W, 1, 72, 3), EXIT());
	EXPECT_H(NB_HOOK_ENV, NB_VERR_CTX_WRITE, 0, ST(BPF_B, 1, 0, 0), MOV64_IMM(0, 0), EXIT());
}

#define ATOMIC64(op, d, s, o) INSN(BPF_STX | BPF_ATOMIC | BPF_DW, d, s, o, op)

/* Regression (review): an atomic on a stack slot holding a spilled pointer turned the address
 * into a number the program could return, store into a map, or add back and dereference
 * (an arbitrary read in the JIT). Also a pointer operand, and a pointer in r0 for cmpxchg. */
static void test_atomic_pointer_laundering(void)
{
	/* fetch_add on a spilled map-value pointer */
	EXPECT(NB_VERR_POINTER_LEAK, 4, LD_MAP_VALUE(6, 2, 0), STX(BPF_DW, 10, 6, -8),
	       MOV64_IMM(2, 0), ATOMIC64(BPF_ADD | BPF_FETCH, 10, 2, -8), MOV64_REG(0, 2), EXIT());
	/* plain atomic add on a spilled pointer, then a load */
	EXPECT(NB_VERR_POINTER_LEAK, 4, LD_MAP_VALUE(6, 2, 0), STX(BPF_DW, 10, 6, -8),
	       MOV64_IMM(2, 1), ATOMIC64(BPF_ADD, 10, 2, -8), LDX(BPF_DW, 0, 10, -8), EXIT());
	/* xchg and cmpxchg on a spilled pointer */
	EXPECT(NB_VERR_POINTER_LEAK, 4, LD_MAP_VALUE(6, 2, 0), STX(BPF_DW, 10, 6, -8),
	       MOV64_IMM(2, 0), ATOMIC64(BPF_XCHG, 10, 2, -8), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 5, LD_MAP_VALUE(6, 2, 0), STX(BPF_DW, 10, 6, -8),
	       MOV64_IMM(2, 0), MOV64_IMM(0, 0), ATOMIC64(BPF_CMPXCHG, 10, 2, -8), EXIT());
	/* a pointer operand into a stack number, and a pointer in r0 for cmpxchg */
	EXPECT(NB_VERR_POINTER_LEAK, 1, ST(BPF_DW, 10, -8, 0), ATOMIC64(BPF_ADD, 10, 1, -8),
	       LDX(BPF_DW, 0, 10, -8), EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 3, ST(BPF_DW, 10, -8, 0), MOV64_IMM(2, 0), MOV64_REG(0, 10),
	       ATOMIC64(BPF_CMPXCHG, 10, 2, -8), MOV64_IMM(0, 0), EXIT());
	/* the same atomics on numbers stay accepted */
	OK(ST(BPF_DW, 10, -8, 5), MOV64_IMM(2, 1), ATOMIC64(BPF_ADD | BPF_FETCH, 10, 2, -8),
	   MOV64_IMM(0, 5), ATOMIC64(BPF_CMPXCHG, 10, 2, -8), LDX(BPF_DW, 0, 10, -8), EXIT());
}

static void test_map_stack(void)
{
	/* variable offset one past the end: i <= 64 instead of i < 64 */
	EXPECT(NB_VERR_MAP_VALUE_OOB, 11, LDX(BPF_W, 6, 1, 24), LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 5),
	       JMP_IMM(BPF_JGT, 6, 64, 4), ALU64_IMM(BPF_LSH, 6, 3), ALU64_REG(BPF_ADD, 0, 6),
	       LDX(BPF_DW, 3, 0, 0), MOV64_IMM(0, 0), MOV64_IMM(0, 0), EXIT());
	/* unbounded index */
	EXPECT(NB_VERR_MAP_VALUE_OOB, 9, LDX(BPF_W, 6, 1, 24), LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 2),
	       ALU64_REG(BPF_ADD, 0, 6), LDX(BPF_B, 3, 0, 0), MOV64_IMM(0, 0), EXIT());
	/* ALU32 bound that wraps: (i & 7) - 8 is 0xfffffff8.. as a 32-bit value */
	EXPECT(NB_VERR_MAP_VALUE_OOB, 11, LDX(BPF_W, 6, 1, 24), LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 4),
	       ALU32_IMM(BPF_AND, 6, 7), ALU32_IMM(BPF_SUB, 6, 8), ALU64_REG(BPF_ADD, 0, 6),
	       LDX(BPF_B, 3, 0, 0), MOV64_IMM(0, 0), EXIT());
	/* JMP32 only bounds the low half of a 64-bit value */
	EXPECT(NB_VERR_MAP_VALUE_OOB, 10, LDX(BPF_DW, 6, 1, 8), LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 3),
	       JMP32_IMM(BPF_JGT, 6, 63, 2), ALU64_REG(BPF_ADD, 0, 6), LDX(BPF_B, 3, 0, 0),
	       MOV64_IMM(0, 0), EXIT());
	/* constant offset past the end */
	EXPECT(NB_VERR_MAP_VALUE_OOB, 7, LOOKUP0, JMP_IMM(BPF_JEQ, 0, 0, 1), LDX(BPF_DW, 3, 0, 9),
	       MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_READONLY_MAP, 2, LD_MAP_VALUE(1, 2, 0), ST(BPF_W, 1, 0, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 7, LOOKUP0, JMP_IMM(BPF_JEQ, 0, 0, 1), STX(BPF_DW, 0, 10, 0),
	       MOV64_IMM(0, 0), EXIT());
	/* stack */
	EXPECT(NB_VERR_UNINIT_STACK, 0, LDX(BPF_DW, 0, 10, -8), EXIT());
	EXPECT(NB_VERR_UNINIT_STACK, 1, ST(BPF_W, 10, -8, 0), LDX(BPF_DW, 0, 10, -8), EXIT());
	EXPECT(NB_VERR_STACK_OOB, 0, ST(BPF_W, 10, 0, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_STACK_LIMIT, 0, ST(BPF_DW, 10, -520, 0), MOV64_IMM(0, 0), EXIT());
	/* a variable offset into the stack is checked where it is used (issue 24 item 5b) */
	EXPECT(NB_VERR_STACK_OOB, 3, LDX(BPF_W, 2, 1, 24), MOV64_REG(3, 10), ALU64_REG(BPF_ADD, 3, 2),
	       LDX(BPF_B, 0, 3, 0), EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 1, STX(BPF_DW, 10, 1, -8), LDX(BPF_W, 0, 10, -8), EXIT());
	OK(STX(BPF_DW, 10, 1, -8), LDX(BPF_DW, 2, 10, -8), LDX(BPF_W, 0, 2, 24), EXIT());
	EXPECT(NB_VERR_INVALID_MEM, 1, MOV64_IMM(2, 4096), LDX(BPF_W, 0, 2, 0), EXIT());
	EXPECT(NB_VERR_UNINIT_REG, 0, LDX(BPF_W, 0, 3, 0), EXIT());
}

static void test_helpers(void)
{
	EXPECT(NB_VERR_HELPER_UNKNOWN, 0, CALL(99), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_HELPER_UNKNOWN, 0, CALL(-1), MOV64_IMM(0, 0), EXIT());
	EXPECT_H(NB_HOOK_NET, NB_VERR_HELPER_DENIED, 0, CALL(7), MOV64_IMM(0, 0), EXIT());
	EXPECT_H(NB_HOOK_PROFILER, NB_VERR_OK, -1, CALL(7), EXIT());
	/* map argument that is not a map */
	EXPECT(NB_VERR_HELPER_ARG, 3, ST(BPF_DW, 10, -8, 0), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8),
	       CALL(1), MOV64_IMM(0, 0), EXIT());
	/* uninitialised key */
	EXPECT(NB_VERR_HELPER_ARG, 4, MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8), LD_MAP(1, 0),
	       CALL(1), MOV64_IMM(0, 0), EXIT());
	/* key shorter than key_size (4 of 8 bytes) */
	EXPECT(NB_VERR_HELPER_ARG, 5, ST(BPF_W, 10, -8, 0), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8),
	       LD_MAP(1, 0), CALL(1), MOV64_IMM(0, 0), EXIT());
	/* key buffer running past the frame */
	EXPECT(NB_VERR_HELPER_ARG, 5, ST(BPF_W, 10, -4, 0), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -4),
	       LD_MAP(1, 0), CALL(1), MOV64_IMM(0, 0), EXIT());
	/* ctx as a key */
	EXPECT(NB_VERR_HELPER_ARG, 3, MOV64_REG(2, 1), LD_MAP(1, 0), CALL(1), MOV64_IMM(0, 0), EXIT());
	/* value containing a pointer */
	EXPECT(NB_VERR_POINTER_LEAK, 10, ST(BPF_DW, 10, -8, 1), STX(BPF_DW, 10, 10, -24), ST(BPF_DW, 10, -16, 0),
	       LD_MAP(1, 0), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8), MOV64_REG(3, 10),
	       ALU64_IMM(BPF_ADD, 3, -24), MOV64_IMM(4, 0), CALL(2), MOV64_IMM(0, 0), EXIT());
	/* printk size not bounded / zero */
	EXPECT(NB_VERR_HELPER_ARG, 3, LD_MAP_VALUE(1, 2, 0), MOV64_IMM(2, 0), CALL(6), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_HELPER_ARG, 3, LD_MAP_VALUE(1, 2, 0), MOV64_IMM(2, 17), CALL(6), MOV64_IMM(0, 0), EXIT());
	/* registers r1-r5 are dead after a call */
	EXPECT(NB_VERR_UNINIT_REG, 1, CALL(5), MOV64_REG(0, 1), EXIT());
	/* a callee leaves a pointer to its own stack in the caller's stack */
	EXPECT(NB_VERR_POINTER_LEAK, 6, MOV64_REG(1, 10), ALU64_IMM(BPF_ADD, 1, -8), CALL_LOCAL(2),
	       MOV64_IMM(0, 0), EXIT(), STX(BPF_DW, 1, 10, 0), EXIT());
	/* a void function: fine unless the caller reads r0 */
	OK(CALL_LOCAL(2), MOV64_IMM(0, 0), EXIT(), MOV64_IMM(2, 1), EXIT());
	EXPECT(NB_VERR_UNINIT_REG, 1, CALL_LOCAL(3), MOV64_REG(1, 0), MOV64_IMM(0, 0), EXIT(),
	       MOV64_IMM(2, 1), EXIT());
	/* a callee reads and writes its caller's stack through a pointer argument */
	OK(ST(BPF_DW, 10, -8, 7), MOV64_REG(1, 10), ALU64_IMM(BPF_ADD, 1, -8), CALL_LOCAL(2),
	   LDX(BPF_DW, 0, 10, -8), EXIT(), LDX(BPF_DW, 2, 1, 0), ALU64_IMM(BPF_ADD, 2, 1),
	   STX(BPF_DW, 1, 2, 0), MOV64_IMM(0, 0), EXIT());
	/* call depth */
	EXPECT(NB_VERR_CALL_DEPTH, 0, CALL_LOCAL(-1), EXIT());
	EXPECT(NB_VERR_CALL_DEPTH, -1, MOV64_IMM(0, 0), CALL_LOCAL(1), EXIT(), CALL_LOCAL(-1), EXIT());
}

static void test_loops(void)
{
	EXPECT(NB_VERR_INFINITE_LOOP, 2, LDX(BPF_W, 0, 1, 24), JMP_IMM(BPF_JEQ, 0, 0, 1), JA(-1), EXIT());
	EXPECT(NB_VERR_INFINITE_LOOP, 2, LDX(BPF_W, 0, 1, 24), JMP_IMM(BPF_JEQ, 0, 0, 1),
	       INSN(BPF_JMP32 | BPF_JA, 0, 0, 0, -1), EXIT());
	/* two-block cycle 2 -> 4 -> 3 -> 2 */
	EXPECT(NB_VERR_INFINITE_LOOP, -1, LDX(BPF_W, 0, 1, 24), JMP_IMM(BPF_JEQ, 0, 0, 3), JA(1),
	       JA(-2), JA(-2), EXIT());
	/* terminates only for some inputs: x += 2 until x == 10 */
	EXPECT(NB_VERR_INFINITE_LOOP, 2, LDX(BPF_W, 0, 1, 28), ALU32_IMM(BPF_ADD, 0, 2),
	       JMP_IMM(BPF_JNE, 0, 10, -2), EXIT());
	/* a counter with an input-dependent bound: the budget runs out, reported at the head */
	EXPECT(NB_VERR_BUDGET, 2, LDX(BPF_W, 6, 1, 28), ALU64_IMM(BPF_ADD, 6, -1),
	       JMP_IMM(BPF_JNE, 6, 0, -2), MOV64_IMM(0, 0), EXIT());
	CHECK_STR_CONTAINS(last_diag.msg, "20000");
	OK(MOV64_IMM(6, 100), ALU64_IMM(BPF_ADD, 6, -1), JMP_IMM(BPF_JNE, 6, 0, -2), MOV64_IMM(0, 0), EXIT());
}

static void test_misc(void)
{
	/* a divisor that may be zero: defined by the ISA (x / 0 = 0, x % 0 = x), accepted
	 * with one warning at the division (regression: E-DIV-ZERO refused them) */
#define WARN_DIV(at, ...)                                                                   \
	do {                                                                                \
		OK(__VA_ARGS__);                                                            \
		CHECK(last_warns.count == 1);                                               \
		CHECK(last_warns.w[0].warning && last_warns.w[0].code == NB_VERR_DIV_ZERO); \
		CHECK(last_warns.w[0].insn == (at));                                        \
		CHECK(!strcmp(verifier_diag_code(&last_warns.w[0]), "W-DIV-ZERO"));        \
	} while (0)
	WARN_DIV(1, MOV64_IMM(0, 1), ALU64_IMM(BPF_DIV, 0, 0), EXIT());
	CHECK_STR_CONTAINS(last_warns.w[0].msg, "the constant 0");
	WARN_DIV(1, MOV64_IMM(0, 1), ALU32_IMM(BPF_MOD, 0, 0), EXIT());
	WARN_DIV(2, LDX(BPF_W, 2, 1, 28), MOV64_IMM(0, 1), ALU64_REG(BPF_DIV, 0, 2), EXIT());
	CHECK_STR_CONTAINS(last_warns.w[0].msg, "may be zero");
	/* zero only on one path */
	WARN_DIV(5, LDX(BPF_W, 3, 1, 24), MOV64_IMM(2, 4), JMP_IMM(BPF_JGT, 3, 5, 1),
		 MOV64_IMM(2, 0), MOV64_IMM(0, 100), ALU64_REG(BPF_DIV, 0, 2), EXIT());
	/* 32-bit divisor: high bits set but low half zero */
	WARN_DIV(3, LD_IMM64(2, 0, 1), MOV64_IMM(0, 1), ALU32_REG(BPF_DIV, 0, 2), EXIT());
	/* the result is bounded as the ISA defines it: 100 / [0, 4] is in [0, 100], so an
	 * index 100 / d into a 512-byte value is accepted, 1000 / d (up to 1000) is not */
	WARN_DIV(10, LDX(BPF_W, 6, 1, 24), ALU64_IMM(BPF_AND, 6, 3), LOOKUP1,
		 JMP_IMM(BPF_JEQ, 0, 0, 4), MOV64_IMM(7, 100), ALU64_REG(BPF_DIV, 7, 6),
		 ALU64_REG(BPF_ADD, 0, 7), LDX(BPF_B, 3, 0, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_MAP_VALUE_OOB, 12, LDX(BPF_W, 6, 1, 24), ALU64_IMM(BPF_AND, 6, 3), LOOKUP1,
	       JMP_IMM(BPF_JEQ, 0, 0, 4), MOV64_IMM(7, 1000), ALU64_REG(BPF_DIV, 7, 6),
	       ALU64_REG(BPF_ADD, 0, 7), LDX(BPF_B, 3, 0, 0), MOV64_IMM(0, 0), EXIT());
	/* a non-zero divisor: no warning */
	OK(LDX(BPF_W, 2, 1, 28), ALU64_IMM(BPF_OR, 2, 1), MOV64_IMM(0, 1), ALU64_REG(BPF_DIV, 0, 2), EXIT());
	CHECK(last_warns.count == 0);
	EXPECT(NB_VERR_UNINIT_REG, 0, MOV64_REG(0, 5), EXIT());
	EXPECT(NB_VERR_UNINIT_REG, 0, ALU64_IMM(BPF_ADD, 0, 1), EXIT());
	EXPECT(NB_VERR_RETURN, 0, EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 1, MOV64_REG(0, 10), EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 1, MOV64_REG(0, 1), EXIT());
	EXPECT(NB_VERR_BAD_JUMP, 0, JA(5), EXIT());
	EXPECT(NB_VERR_BAD_JUMP, 0, JMP_IMM(BPF_JEQ, 1, 0, 1), LD_IMM64(0, 1, 0), EXIT());
	EXPECT(NB_VERR_FALL_OFF, 0, MOV64_IMM(0, 0));
	EXPECT(NB_VERR_FALL_OFF, 1, MOV64_IMM(0, 0), JMP_IMM(BPF_JEQ, 0, 0, -1));
	EXPECT(NB_VERR_BAD_INSN, 1, MOV64_IMM(0, 0), INSN(0xff, 0, 0, 0, 0), EXIT());
	EXPECT(NB_VERR_BAD_INSN, 1, MOV64_IMM(0, 0), INSN(BPF_ALU64 | BPF_MOV | BPF_K, 10, 0, 0, 0), EXIT());
	EXPECT(NB_VERR_BAD_INSN, 0, INSN(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 0), EXIT());
	EXPECT(NB_VERR_BAD_INSN, 0, INSN(BPF_LDDW, 1, 1, 0, 7), INSN(0, 0, 0, 0, 0), MOV64_IMM(0, 0), EXIT());
	/* a direct value address of a hash map does not exist */
	EXPECT(NB_VERR_BAD_INSN, 0, LD_MAP_VALUE(1, 0, 0), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_UNREACHABLE, 2, MOV64_IMM(0, 0), EXIT(), MOV64_IMM(0, 1), EXIT());
	{
		static struct bpf_insn big[5000];
		for (int i = 0; i < 4999; i++)
			big[i] = MOV64_IMM(0, 0);
		big[4999] = EXIT();
		CHECK(verify_hook(NB_HOOK_TUNER, big, 5000, 0) == NB_VERR_PROG_SIZE);
	}
	/* pruning must not merge a scalar with a pointer (CVE-2017-17864 shape) */
	EXPECT(NB_VERR_POINTER_LEAK, -1, LDX(BPF_W, 6, 1, 24), MOV64_IMM(7, 0), JMP_IMM(BPF_JEQ, 6, 0, 1),
	       MOV64_REG(7, 10), /* 4 */ MOV64_REG(0, 7), EXIT());
	/* pruning must respect precision: r7 = 10 decides a branch; r7 = 0 reaches bad code */
	EXPECT(NB_VERR_INVALID_MEM, 6, LDX(BPF_W, 6, 1, 24), MOV64_IMM(7, 0), JMP_IMM(BPF_JEQ, 6, 0, 1),
	       MOV64_IMM(7, 10), /* 4 */ MOV64_IMM(0, 0), JMP_IMM(BPF_JGT, 7, 5, 1),
	       LDX(BPF_W, 0, 0, 0), EXIT());
	/* the same through a spilled scalar */
	EXPECT(NB_VERR_INVALID_MEM, 8, LDX(BPF_W, 6, 1, 24), MOV64_IMM(7, 0), JMP_IMM(BPF_JEQ, 6, 0, 1),
	       MOV64_IMM(7, 10), /* 4 */ STX(BPF_DW, 10, 7, -8), MOV64_IMM(0, 0), LDX(BPF_DW, 8, 10, -8),
	       JMP_IMM(BPF_JGT, 8, 5, 1), LDX(BPF_W, 0, 0, 0), EXIT());
	/* precision flows through register comparisons: r2 == r7 gives r2 r7's range, so a
	 * decision on r2 makes r7 precise (r7 = 100 is explored first and is safe) */
	EXPECT(NB_VERR_INVALID_MEM, 8, LDX(BPF_W, 6, 1, 24), MOV64_IMM(7, 0), JMP_IMM(BPF_JEQ, 6, 0, 1),
	       MOV64_IMM(7, 100), /* 4 */ LDX(BPF_W, 2, 1, 28), MOV64_IMM(0, 0),
	       JMP_REG(BPF_JNE, 2, 7, 2), JMP_IMM(BPF_JGE, 2, 50, 1), LDX(BPF_W, 0, 0, 0), EXIT());
	/* "if r0 == r7" is a NULL check only while r7 is exactly 0: r7 = 0 is explored first,
	 * then r7 = 5 must not be pruned (and comparing a pointer with 5 reveals address bits) */
	EXPECT(NB_VERR_POINTER_CMP, 10, LDX(BPF_W, 6, 1, 24), MOV64_IMM(7, 5), JMP_IMM(BPF_JEQ, 6, 0, 1),
	       MOV64_IMM(7, 0), /* 4 */ LOOKUP0, JMP_REG(BPF_JEQ, 0, 7, 2), LDX(BPF_DW, 0, 0, 0), EXIT(),
	       MOV64_IMM(0, 0), EXIT());
	/* linked copies: a check on r2 bounds r3 as well; pruning must keep the link */
	OK(LDX(BPF_W, 6, 1, 24), LOOKUP1, JMP_IMM(BPF_JEQ, 0, 0, 6), MOV64_REG(3, 6), JMP_IMM(BPF_JGT, 6, 63, 4),
	   ALU64_IMM(BPF_LSH, 3, 3), ALU64_REG(BPF_ADD, 0, 3), LDX(BPF_DW, 3, 0, 0), MOV64_IMM(0, 0),
	   MOV64_IMM(0, 0), EXIT());
	/* diagnostics name the source line when line info is present */
	{
		struct bpf_insn p[] = { LOOKUP0, LDX(BPF_DW, 3, 0, 0), MOV64_IMM(0, 0), EXIT() };
		struct nb_line_info li[] = { { 0, "x.bpf.c", "  __u64 key = 0;", 10, 3 },
					     { 6, "x.bpf.c", "  return v->count;", 14, 12 } };
		struct nb_program prog = { .name = "t", .insns = p, .insn_cnt = 9, .lines = li, .line_cnt = 2 };
		struct nb_verifier_diag d;
		CHECK(verifier_check(&prog, maps, 3, hook_desc(NB_HOOK_TUNER), NULL, &d, NULL) == -13);
		CHECK(d.line == 14 && d.insn == 6);
		CHECK_STR_CONTAINS(verifier_err_code(d.code), "E-NULL-DEREF");
	}
}

/* Oracle for test_ctx_tables, from the bytes' owners: an aligned read is allowed iff it lies
 * inside one readable field; an aligned write iff it tiles whole writable fields. */
static bool ctx_oracle(const struct nb_hook_desc *hd, uint32_t off, unsigned sz, bool write)
{
	const struct nb_ctx_field *owner[1024] = { 0 };
	if (off + sz > hd->ctx_size || hd->ctx_size > 1024)
		return false;
	for (size_t i = 0; i < hd->field_cnt; i++)
		for (uint32_t b = 0; b < hd->fields[i].size; b++)
			owner[hd->fields[i].off + b] = &hd->fields[i];
	for (uint32_t b = off; b < off + sz; b++) {
		const struct nb_ctx_field *f = owner[b];
		if (!f || !(write ? f->writable : f->readable))
			return false;
		bool inside = f->off <= off && off + sz <= f->off + f->size;
		bool whole = f->off >= off && f->off + f->size <= off + sz;
		if (write ? !whole : !inside)
			return false;
	}
	return true;
}

/* Every field of every hook at every size and aligned offset against ctx_oracle; nothing
 * past the end passes. */
static void test_ctx_tables(void)
{
	static const uint8_t sizes[] = { BPF_B, BPF_H, BPF_W, BPF_DW };
	for (int h = NB_HOOK_TUNER; h < NB_HOOK_COUNT; h++) {
		const struct nb_hook_desc *hd = hook_desc((enum nb_hook_type)h);
		CHECK(hd && hd->ctx_size > 0 && hd->field_cnt > 0);
		for (uint32_t off = 0; off < hd->ctx_size + 8; off++) {
			for (int si = 0; si < 4; si++) {
				unsigned sz = 1u << si;
				if (off % sz)
					continue; /* misaligned reads are covered in test_ctx */
				const struct nb_ctx_field *f = hook_ctx_field(hd, off, sz);
				struct bpf_insn rd[] = { LDX(sizes[si], 0, 1, (int16_t)off), MOV64_IMM(0, 0), EXIT() };
				struct bpf_insn wr[] = { ST(sizes[si], 1, (int16_t)off, 1), MOV64_IMM(0, 0), EXIT() };
				int r = verify_hook((enum nb_hook_type)h, rd, 3, 0);
				int w = verify_hook((enum nb_hook_type)h, wr, 3, 0);
				bool rok = ctx_oracle(hd, off, sz, false);
				bool wok = ctx_oracle(hd, off, sz, true);
				test_checks += 2;
				if ((r == 0) != rok || (w == 0) != wok) {
					test_failures++;
					fprintf(stderr, "%s ctx off %u size %u: read %s write %s\n", hd->name,
						off, sz, r ? verifier_err_code((enum nb_verr)r) : "ok",
						w ? verifier_err_code((enum nb_verr)w) : "ok");
				}
				if (!f && !rok)
					CHECK(r == NB_VERR_CTX_ACCESS);
				if (f && !f->writable)
					CHECK(w == NB_VERR_CTX_WRITE);
			}
		}
		/* every output field of the tuner is writable, every input is not */
		for (size_t i = 0; i < hd->field_cnt; i++)
			if (h == NB_HOOK_PROFILER)
				CHECK(!hd->fields[i].writable);
	}
	CHECK(hook_for_section("tuner/chunk")->type == NB_HOOK_TUNER_CHUNK);
	CHECK(hook_for_section("tuner")->type == NB_HOOK_TUNER);
	CHECK(hook_for_section("profiler/coll")->type == NB_HOOK_PROFILER);
	CHECK(hook_for_section("tunerx") == NULL);
	CHECK(hook_by_name("env")->type == NB_HOOK_ENV);
	CHECK(hook_helper(hook_desc(NB_HOOK_TUNER), 7) != NULL);
	CHECK(hook_helper(hook_desc(NB_HOOK_NET), 7) == NULL);
	CHECK(hook_helper(hook_desc(NB_HOOK_CONFORMANCE), NB_HELPER_CONFORMANCE_IDENTITY)->args[0] == NB_ARG_ANYTHING);
	CHECK(hook_desc(NB_HOOK_CONFORMANCE)->ctx_is_raw_memory);
	CHECK(hook_desc(NB_HOOK_TUNER)->stack_size == 512 && hook_desc(NB_HOOK_TUNER)->max_insns == 4096);
}

/* conformance hook: raw memory of opts.mem_size bytes, the identity helper */
static void test_conformance(void)
{
	struct bpf_insn p[] = { LDX(BPF_DW, 0, 1, 8), MOV64_REG(1, 0), CALL(5), EXIT() };
	struct nb_program prog = { .name = "c", .insns = p, .insn_cnt = 4 };
	struct nb_verifier_opts opts = { .mem_size = 16 };
	struct nb_verifier_diag d;
	CHECK(verifier_check(&prog, NULL, 0, hook_desc(NB_HOOK_CONFORMANCE), &opts, &d, NULL) == 0);
	opts.mem_size = 15;
	CHECK(verifier_check(&prog, NULL, 0, hook_desc(NB_HOOK_CONFORMANCE), &opts, &d, NULL) == -13);
	CHECK(d.code == NB_VERR_CTX_ACCESS);

	/* Regression (review): raw memory may be NULL when the program is verified without a
	 * buffer; the "r1 == 0" path was assumed impossible, left unexplored, and still ran. */
	struct bpf_insn q[] = { JMP_IMM(BPF_JEQ, 1, 0, 2), MOV64_IMM(0, 0), EXIT(),
				LD_IMM64(1, 0x41414140, 0), LDX(BPF_DW, 0, 1, 0), EXIT() };
	struct nb_program qp = { .name = "q", .insns = q, .insn_cnt = 7 };
	opts.mem_size = 0;
	CHECK(verifier_check(&qp, NULL, 0, hook_desc(NB_HOOK_CONFORMANCE), &opts, &d, NULL) == -13);
	CHECK(d.code == NB_VERR_INVALID_MEM && d.insn == 5);
	/* with a buffer the runtime guarantees it is non-NULL: that path is dead */
	opts.mem_size = 8;
	CHECK(verifier_check(&qp, NULL, 0, hook_desc(NB_HOOK_CONFORMANCE), &opts, &d, NULL) == 0);
}

/* Regression (review): stack bytes holding a spilled pointer were accepted as a map key
 * (stored by update, readable from user space) or as a trace_printk buffer (logged). */
static void test_helper_buffer_pointers(void)
{
	EXPECT(NB_VERR_POINTER_LEAK, 5, STX(BPF_DW, 10, 1, -8), MOV64_REG(2, 10),
	       ALU64_IMM(BPF_ADD, 2, -8), LD_MAP(1, 0), CALL(1), MOV64_IMM(0, 0), EXIT());
	EXPECT(NB_VERR_POINTER_LEAK, 4, STX(BPF_DW, 10, 10, -8), MOV64_REG(1, 10),
	       ALU64_IMM(BPF_ADD, 1, -8), MOV64_IMM(2, 8), CALL(6), MOV64_IMM(0, 0), EXIT());
	/* numbers in the same places are fine */
	OK(ST(BPF_DW, 10, -8, 7), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -8), LD_MAP(1, 0), CALL(1),
	   MOV64_IMM(0, 0), EXIT());
	OK(ST(BPF_DW, 10, -8, 7), MOV64_REG(1, 10), ALU64_IMM(BPF_ADD, 1, -8), MOV64_IMM(2, 8),
	   MOV64_IMM(3, 0), MOV64_IMM(4, 0), MOV64_IMM(5, 0), CALL(6), MOV64_IMM(0, 0), EXIT());
}

/* Regression (review): a map value pointer with an unbounded variable offset can be 0; its
 * "== 0" path was left unexplored but executed. Now rejected: whether it is 0 depends on
 * the address. */
static void test_pointer_null_compare(void)
{
	EXPECT(NB_VERR_POINTER_CMP, 4, LD_MAP_VALUE(6, 1, 0), LDX(BPF_DW, 2, 1, 8),
	       ALU64_REG(BPF_ADD, 6, 2), JMP_IMM(BPF_JEQ, 6, 0, 2), MOV64_IMM(0, 0), EXIT(),
	       LD_IMM64(1, 0x41414140, 0), LDX(BPF_DW, 0, 1, 0), EXIT());
	/* a bounded pointer (stack, context, constant map value offset) is never 0: the dead
	 * path is not explored, so the program is accepted */
	OK(LD_MAP_VALUE(6, 1, 8), JMP_IMM(BPF_JEQ, 6, 0, 2), MOV64_IMM(0, 0), EXIT(),
	   LD_IMM64(1, 0x41414140, 0), LDX(BPF_DW, 0, 1, 0), EXIT());
	OK(JMP_IMM(BPF_JNE, 1, 0, 4), LD_IMM64(1, 0x41414140, 0), LDX(BPF_DW, 0, 1, 0), EXIT(),
	   MOV64_IMM(0, 0), EXIT());

	/* the verifier reports which instructions some path executes: the dead branch (the
	 * context pointer is never NULL) is 0, so the runtime can trap it */
	struct bpf_insn d[] = { JMP_IMM(BPF_JNE, 1, 0, 4), LD_IMM64(1, 0x41414140, 0),
				LDX(BPF_DW, 0, 1, 0), EXIT(), MOV64_IMM(0, 0), EXIT() };
	struct nb_program dp = { .name = "d", .insns = d, .insn_cnt = 7, .main_insn_cnt = 7 };
	uint8_t visited[7];
	memset(visited, 0xee, sizeof(visited));
	struct nb_verifier_opts vo = { .visited = visited };
	struct nb_verifier_diag diag;
	CHECK(verifier_check(&dp, maps, 3, hook_desc(NB_HOOK_TUNER), &vo, &diag, NULL) == 0);
	static const uint8_t want[7] = { 1, 0, 0, 0, 0, 1, 1 };
	CHECK(memcmp(visited, want, sizeof(want)) == 0);
}

int main(void)
{
	test_ctx_tables();
	test_conformance();
	test_accept();
	test_null();
	test_ctx();
	test_map_stack();
	test_atomic_pointer_laundering();
	test_pointer_null_compare();
	test_helper_buffer_pointers();
	test_helpers();
	test_loops();
	test_misc();
	TEST_DONE();
}

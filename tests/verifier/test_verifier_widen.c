/* Loop widening (src/verifier/verifier_widen.c) on hand-built programs: counted loops verify
 * in a few iterations whatever their count (stats: widened, instructions processed), and
 * every loop a wrong widening would accept - a counter that stalls, resets or wraps on
 * some path, an index past the end, more iterations than the budget allows, a path whose
 * counter lost its "head value + step" tag pruned against one that has it - is still
 * rejected, with the same code and instruction as plain walking (opts.no_widen). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "insn_macros.h"
#include "test_util.h"
#include "verifier/verifier.h"

enum { M_ARR, M_ONE, M_RULES };
static struct nb_map_def maps[] = {
	[M_ARR] = { .name = "arr", .origin = NB_MAP_ORIGIN_BTF, .type = 2, .key_size = 4, .value_size = 128, .max_entries = 100000 },
	[M_ONE] = { .name = ".bss", .origin = NB_MAP_ORIGIN_BSS, .type = 2, .key_size = 4, .value_size = 128, .max_entries = 1 },
	/* 100 rules of 48 bytes, as tuned_rules' table in .rodata (read-only) */
	[M_RULES] = { .name = ".rodata", .origin = NB_MAP_ORIGIN_RODATA, .type = 2, .key_size = 4, .value_size = 4800, .max_entries = 1, .map_flags = 0x80 },
};

struct result {
	int rc;
	struct nb_verifier_diag diag;
	struct nb_verifier_stats stats;
};

static struct result verify(const struct bpf_insn *insns, size_t n, bool walk, uint64_t budget)
{
	struct nb_program prog = { .name = "t", .insns = (struct bpf_insn *)insns, .insn_cnt = n,
				   .main_insn_cnt = n };
	struct nb_verifier_opts opts = { .budget = budget, .no_widen = walk };
	struct result r;
	memset(&r, 0, sizeof(r));
	r.rc = verifier_check(&prog, maps, sizeof(maps) / sizeof(maps[0]),
			      hook_desc(NB_HOOK_PROFILER), &opts, &r.diag, &r.stats);
	return r;
}

/* Accepted, with a loop widened, processing at most max_processed instructions. */
#define WIDENED(max_processed, ...)                                                          \
	do {                                                                                 \
		const struct bpf_insn p_[] = { __VA_ARGS__ };                                \
		struct result r_ = verify(p_, sizeof(p_) / sizeof(p_[0]), false, 1000000);   \
		CHECK(r_.rc == 0);                                                           \
		CHECK(r_.stats.loops_widened >= 1);                                          \
		CHECK(r_.stats.insns_processed <= (max_processed));                          \
		if (r_.rc || !r_.stats.loops_widened || r_.stats.insns_processed > (max_processed)) \
			fprintf(stderr, "%s:%d: rc %d widened %llu processed %llu runs %llu: %s\n", \
				__FILE__, __LINE__, r_.rc,                                   \
				(unsigned long long)r_.stats.loops_widened,                  \
				(unsigned long long)r_.stats.insns_processed,                \
				(unsigned long long)r_.stats.runs, r_.diag.msg);             \
	} while (0)

/* Rejected with code at insn, exactly as walking rejects it. */
#define REJECTED(budget, want, at, ...)                                                      \
	do {                                                                                 \
		const struct bpf_insn p_[] = { __VA_ARGS__ };                                \
		size_t n_ = sizeof(p_) / sizeof(p_[0]);                                      \
		struct result r_ = verify(p_, n_, false, budget), w_ = verify(p_, n_, true, budget); \
		CHECK(r_.rc == -EACCES && r_.diag.code == (want) && r_.diag.insn == (size_t)(at)); \
		CHECK(w_.rc == r_.rc && w_.diag.code == r_.diag.code && w_.diag.insn == r_.diag.insn); \
		if (r_.rc != -EACCES || r_.diag.code != (want) || r_.diag.insn != (size_t)(at)) \
			fprintf(stderr, "%s:%d: expected %s at %d, got rc %d %s at %zu: %s\n",     \
				__FILE__, __LINE__, verifier_err_code(want), at, r_.rc,      \
				verifier_err_code(r_.diag.code), r_.diag.insn, r_.diag.msg); \
	} while (0)

static void test_accepted(void)
{
	/* for (__u32 i = 0; i < N; i++) sum += lookup(&arr, &i) != NULL, i in a 4-byte slot:
	 * bench_verify_time's loop; 11,004 instructions walked for N = 1,000 */
	for (int32_t n = 100; n <= 10000; n *= 10)
		WIDENED(100, MOV64_IMM(7, 0), ST(BPF_W, 10, -4, 0), /* 2 */ MOV64_REG(2, 10),
			ALU64_IMM(BPF_ADD, 2, -4), LD_MAP(1, M_ARR), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 1),
			ALU64_IMM(BPF_ADD, 7, 1), LDX(BPF_W, 1, 10, -4), ALU64_IMM(BPF_ADD, 1, 1),
			STX(BPF_W, 10, 1, -4), JMP_IMM(BPF_JLT, 1, n, -11), MOV64_REG(0, 7), EXIT());
	/* register counter, 64-bit: r6 = 0; do r7 += r6; while (++r6 < 100000) */
	WIDENED(40, MOV64_IMM(6, 0), MOV64_IMM(7, 0), ALU64_REG(BPF_ADD, 7, 6),
		ALU64_IMM(BPF_ADD, 6, 1), JMP_IMM(BPF_JLT, 6, 100000, -3), MOV64_REG(0, 7), EXIT());
	/* 32-bit counter and test (w9 += 1; if w9 < 5000) */
	WIDENED(40, MOV32_IMM(9, 0), MOV64_IMM(7, 0), ALU64_REG(BPF_ADD, 7, 9),
		ALU32_IMM(BPF_ADD, 9, 1), JMP32_IMM(BPF_JLT, 9, 5000, -3), MOV64_REG(0, 7), EXIT());
	/* counting down: for (i = 3000; i > 0; i--), signed test */
	WIDENED(40, MOV64_IMM(9, 3000), MOV64_IMM(7, 0), ALU64_REG(BPF_XOR, 7, 9),
		ALU64_IMM(BPF_ADD, 9, -1), JMP_IMM(BPF_JSGT, 9, 0, -3), MOV64_REG(0, 7), EXIT());
	/* the test at the top (while loop): the bound comes from the head's own branch */
	WIDENED(60, MOV64_IMM(9, 0), MOV64_IMM(7, 0), /* 2 */ JMP_IMM(BPF_JGE, 9, 20000, 3),
		ALU64_REG(BPF_ADD, 7, 9), ALU64_IMM(BPF_ADD, 9, 1), JA(-4), MOV64_REG(0, 7), EXIT());
	/* indexing a map value by the counter: v[i] for i < 16 (8-byte elements, 128 bytes) */
	WIDENED(60, LD_MAP_VALUE(6, M_ONE, 0), MOV64_IMM(9, 0), MOV64_IMM(7, 0),
		/* 4 */ MOV64_REG(1, 9), ALU64_IMM(BPF_LSH, 1, 3), MOV64_REG(2, 6),
		ALU64_REG(BPF_ADD, 2, 1), LDX(BPF_DW, 3, 2, 0), ALU64_REG(BPF_ADD, 7, 3),
		ALU64_IMM(BPF_ADD, 9, 1), JMP_IMM(BPF_JLT, 9, 16, -8), MOV64_REG(0, 7), EXIT());
	/* a sum of unknown non-negative terms beside the counter: for (i < 1000) sum += x & 127.
	 * Its 64-bit range grows each visit while its sign and low half did not move yet;
	 * regression: W kept those (sum in [0, 2^63 - 2^32 - 1]), a later arrival crossed
	 * them, the proof failed three times and the loop was walked (5,000 processed) */
	WIDENED(60, LD_MAP_VALUE(6, M_ONE, 0), LDX(BPF_DW, 8, 6, 0), MOV64_IMM(9, 0),
		MOV64_IMM(7, 0), /* 5 */ MOV64_REG(1, 8), ALU64_IMM(BPF_AND, 1, 127),
		ALU64_REG(BPF_ADD, 7, 1), ALU64_IMM(BPF_ADD, 9, 1), JMP_IMM(BPF_JLT, 9, 1000, -5),
		MOV64_REG(0, 7), EXIT());
	/* clang -O2 -mcpu=v3 for `for (__u32 i = 1000; i > 0; i--) BUMP(i - 1)`: the step may
	 * wrap 0 to 0xffffffff and the exit test catches exactly that (regression: the tag was
	 * dropped at the step, the loop walked: 14,989 processed) */
	WIDENED(100, MOV32_IMM(6, 999), JA(2), /* 2 */ ALU32_IMM(BPF_ADD, 6, -1),
		JMP32_IMM(BPF_JEQ, 6, -1, 11), STX(BPF_W, 10, 6, -4), MOV64_REG(2, 10),
		ALU64_IMM(BPF_ADD, 2, -4), LD_MAP(1, M_ARR), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, -9),
		LDX(BPF_DW, 1, 0, 0), ALU64_IMM(BPF_ADD, 1, 1), STX(BPF_DW, 0, 1, 0), JA(-13),
		/* 15 */ MOV64_IMM(0, 0), EXIT());
	/* nested: 300 x 300 (the inner loop walked or widened inside the widened outer one) */
	WIDENED(600, MOV64_IMM(8, 0), MOV64_IMM(7, 0), /* 2 */ MOV64_IMM(9, 0),
		/* 3 */ ALU64_REG(BPF_ADD, 7, 9), ALU64_IMM(BPF_ADD, 9, 1),
		JMP_IMM(BPF_JLT, 9, 300, -3), ALU64_IMM(BPF_ADD, 8, 1), JMP_IMM(BPF_JLT, 8, 300, -6),
		MOV64_REG(0, 7), EXIT());
}

/* Rotated loops as clang emits them (issue 24 item 1): the counter's bound is a test that
 * leaves the loop, not the back-edge jump. clang -O2 -mcpu=v3 for
 * `for (__u32 i = 0; i < N; i++) { v = lookup(&m, &i); if (v) *v += 1; }`: the step and an
 * equality exit test at the head, two back-edges (NULL and not NULL). */
static void test_rotated(void)
{
	WIDENED(300, ALU32_IMM(BPF_MOV, 6, 0), JA(2), /* 2 */ ALU32_IMM(BPF_ADD, 6, 1),
		JMP32_IMM(BPF_JEQ, 6, 10000, 11), STX(BPF_W, 10, 6, -4), MOV64_REG(2, 10),
		ALU64_IMM(BPF_ADD, 2, -4), LD_MAP(1, M_ARR), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, -9),
		LDX(BPF_DW, 1, 0, 0), ALU64_IMM(BPF_ADD, 1, 1), STX(BPF_DW, 0, 1, 0), JA(-13),
		/* 15 */ MOV64_IMM(0, 0), EXIT());
	/* an equality exit the counter can step over (by 3 to 10000) never ends: rejected */
	REJECTED(1000000, NB_VERR_BUDGET, 10, ALU32_IMM(BPF_MOV, 6, 0), JA(2), /* 2 */
		 ALU32_IMM(BPF_ADD, 6, 3), JMP32_IMM(BPF_JEQ, 6, 10000, 11), STX(BPF_W, 10, 6, -4),
		 MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -4), LD_MAP(1, M_ARR), CALL(1),
		 JMP_IMM(BPF_JEQ, 0, 0, -9), LDX(BPF_DW, 1, 0, 0), ALU64_IMM(BPF_ADD, 1, 1),
		 STX(BPF_DW, 0, 1, 0), JA(-13), /* 15 */ MOV64_IMM(0, 0), EXIT());
}

/* -mcpu=v1/v2 (no 32-bit jumps): clang compares a zero-extended copy of the 32-bit counter,
 * `r1 = r6; r1 <<= 32; r1 >>= 32` or `w1 = w6`. While r6 < 2^32 the copy is r6 itself, so
 * the exit test bounds the counter (regression: the copy was a new number, the counter's
 * guessed bound never held, and the loop was walked: E-BUDGET at 10,000 iterations). */
static void test_zext_copy(void)
{
	/* clang -O2 -mcpu=v1 for `for (__u32 i = 0; i < N; i++) BUMP(i)`: 17 x N walked */
	WIDENED(200, MOV64_IMM(6, 0), JA(5), /* 2 */ ALU64_IMM(BPF_ADD, 6, 1), MOV64_REG(1, 6),
		ALU64_IMM(BPF_LSH, 1, 32), ALU64_IMM(BPF_RSH, 1, 32), JMP_IMM(BPF_JEQ, 1, 10000, 11),
		/* 7 */ STX(BPF_W, 10, 6, -4), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -4),
		LD_MAP(1, M_ARR), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, -12), LDX(BPF_DW, 1, 0, 0),
		ALU64_IMM(BPF_ADD, 1, 1), STX(BPF_DW, 0, 1, 0), JA(-16), /* 18 */ MOV64_IMM(0, 0),
		EXIT());
	/* the same with `w1 = w6` */
	WIDENED(200, MOV64_IMM(6, 0), JA(3), /* 2 */ ALU64_IMM(BPF_ADD, 6, 1), MOV32_REG(1, 6),
		JMP_IMM(BPF_JEQ, 1, 10000, 11), /* 5 */ STX(BPF_W, 10, 6, -4), MOV64_REG(2, 10),
		ALU64_IMM(BPF_ADD, 2, -4), LD_MAP(1, M_ARR), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, -10),
		LDX(BPF_DW, 1, 0, 0), ALU64_IMM(BPF_ADD, 1, 1), STX(BPF_DW, 0, 1, 0), JA(-14),
		/* 16 */ MOV64_IMM(0, 0), EXIT());
	/* a check on the copy bounds the source only when the source is below 2^32: v[r7]
	 * with r7 a 4-byte load is in bounds, with an 8-byte load it is not (the copy's low
	 * 32 bits are <= 15, r7 may be anything) */
	for (int size = 0; size < 2; size++) {
		const struct bpf_insn p_[] = {
			LD_MAP_VALUE(6, M_ONE, 0), LDX(size ? BPF_DW : BPF_W, 7, 6, 0),
			MOV64_REG(1, 7), ALU64_IMM(BPF_LSH, 1, 32), ALU64_IMM(BPF_RSH, 1, 32),
			JMP_IMM(BPF_JGT, 1, 15, 3), MOV64_REG(2, 6), ALU64_REG(BPF_ADD, 2, 7),
			LDX(BPF_DW, 0, 2, 0), MOV64_IMM(0, 0), EXIT()
		};
		struct result r_ = verify(p_, sizeof(p_) / sizeof(p_[0]), false, 100000);
		CHECK(size ? r_.rc == -EACCES : r_.rc == 0);
		if (size ? r_.rc != -EACCES : r_.rc != 0)
			fprintf(stderr, "%s:%d: size %d: rc %d: %s\n", __FILE__, __LINE__, size, r_.rc,
				r_.diag.msg);
		/* the same with `w1 = w7` */
		const struct bpf_insn q_[] = {
			LD_MAP_VALUE(6, M_ONE, 0), LDX(size ? BPF_DW : BPF_W, 7, 6, 0),
			MOV32_REG(1, 7), JMP_IMM(BPF_JGT, 1, 15, 3), MOV64_REG(2, 6),
			ALU64_REG(BPF_ADD, 2, 7), LDX(BPF_DW, 0, 2, 0), MOV64_IMM(0, 0), EXIT()
		};
		r_ = verify(q_, sizeof(q_) / sizeof(q_[0]), false, 100000);
		CHECK(size ? r_.rc == -EACCES : r_.rc == 0);
		if (size ? r_.rc != -EACCES : r_.rc != 0)
			fprintf(stderr, "%s:%d: size %d: rc %d: %s\n", __FILE__, __LINE__, size, r_.rc,
				r_.diag.msg);
	}
	/* a jump onto the second shift (from insn 4, r1 = 0 and r7 > 100): r1 there is not
	 * always the copy, so the check on it must not bound r7 (the fall-through path alone,
	 * r7 <= 15 after the check, would be in bounds) */
	{
		const struct bpf_insn p_[] = {
			LD_MAP_VALUE(6, M_ONE, 0), LDX(BPF_W, 7, 6, 0), MOV64_IMM(1, 0),
			JMP_IMM(BPF_JGT, 7, 100, 2), MOV64_REG(1, 7), ALU64_IMM(BPF_LSH, 1, 32),
			/* 7 */ ALU64_IMM(BPF_RSH, 1, 32), JMP_IMM(BPF_JGT, 1, 15, 3), MOV64_REG(2, 6),
			ALU64_REG(BPF_ADD, 2, 7), LDX(BPF_DW, 0, 2, 0), MOV64_IMM(0, 0), EXIT()
		};
		struct result r_ = verify(p_, sizeof(p_) / sizeof(p_[0]), false, 100000);
		CHECK(r_.rc == -EACCES && r_.diag.insn == 11);
	}
}

static void test_rejected(void)
{
	/* v[i] for i < 17: the last iteration reads past the 128-byte value */
	REJECTED(1000000, NB_VERR_MAP_VALUE_OOB, 8, LD_MAP_VALUE(6, M_ONE, 0), MOV64_IMM(9, 0),
		 MOV64_IMM(7, 0), /* 4 */ MOV64_REG(1, 9), ALU64_IMM(BPF_LSH, 1, 3),
		 MOV64_REG(2, 6), ALU64_REG(BPF_ADD, 2, 1), LDX(BPF_DW, 3, 2, 0),
		 ALU64_REG(BPF_ADD, 7, 3), ALU64_IMM(BPF_ADD, 9, 1), JMP_IMM(BPF_JLT, 9, 17, -8),
		 MOV64_REG(0, 7), EXIT());
	/* a path that skips the increment (global[0] == 5): never ends */
	REJECTED(1000000, NB_VERR_INFINITE_LOOP, 6, LD_MAP_VALUE(6, M_ONE, 0), MOV64_IMM(9, 0),
		 /* 3 */ LDX(BPF_DW, 3, 6, 0), JMP_IMM(BPF_JEQ, 3, 5, 1), ALU64_IMM(BPF_ADD, 9, 1),
		 JMP_IMM(BPF_JLT, 9, 100, -4), MOV64_IMM(0, 0), EXIT());
	/* a path that resets the counter to [8, 15] while the other one steps it. The
	 * resetting path reaches the join (insn 13) after the stepping one was fully explored
	 * there with r2 = i + 1 in [1, 16]: its r2 in [8, 15] is inside that range but lacks
	 * the "head value + 1" tag, so it must not be pruned (regression: it was, and this
	 * infinite loop verified) */
	REJECTED(1000000, NB_VERR_INFINITE_LOOP, 14, LD_MAP_VALUE(6, M_ONE, 0), MOV64_IMM(9, 0),
		 /* 3 */ JMP_IMM(BPF_JGE, 9, 16, 11), LDX(BPF_DW, 3, 6, 0), LDX(BPF_DW, 4, 6, 8),
		 ALU64_IMM(BPF_AND, 4, 7), JMP_IMM(BPF_JEQ, 3, 5, 3), /* A */ MOV64_REG(2, 9),
		 ALU64_IMM(BPF_ADD, 2, 1), JA(2), /* B */ MOV64_REG(2, 4), ALU64_IMM(BPF_ADD, 2, 8),
		 /* 13: join */ MOV64_REG(9, 2), JA(-12), MOV64_REG(0, 9), EXIT());
	/* u32 counter from 5 until it equals 3: wraps, 2^32 iterations */
	REJECTED(1000000, NB_VERR_BUDGET, 3, MOV32_IMM(9, 5), /* 1 */ MOV64_REG(0, 9),
		 ALU32_IMM(BPF_ADD, 9, 1), JMP32_IMM(BPF_JNE, 9, 3, -3), MOV64_IMM(0, 0), EXIT());
	/* w9 += 2^30 wraps to 0 after 4 steps and never equals 5: the step is "+2^30" only
	 * while the 32-bit add cannot wrap (regression: without that check the counter looked
	 * strictly increasing within [0, 2^32 - 1], 4 iterations, and this verified) */
	REJECTED(1000000, NB_VERR_INFINITE_LOOP, 3, MOV32_IMM(9, 0), /* 1 */ MOV64_REG(0, 9),
		 ALU32_IMM(BPF_ADD, 9, 0x40000000), JMP32_IMM(BPF_JNE, 9, 5, -3), MOV64_IMM(0, 0),
		 EXIT());
	/* counting down by 2 from an even start to the wrap test `w9 == -1`: 0 steps to
	 * 0xfffffffe, never -1, forever; the congruent (mod 2^32) step proves nothing here:
	 * the wrapped values leave W's range */
	REJECTED(1000000, NB_VERR_BUDGET, 5, MOV32_IMM(9, 1000), JA(2), /* 2 */
		 ALU32_IMM(BPF_ADD, 9, -2), JMP32_IMM(BPF_JEQ, 9, -1, 2), MOV64_REG(0, 9), JA(-4),
		 MOV64_IMM(0, 0), EXIT());
	/* the same loop stepping by 2 from an even start towards an odd bound: never equal */
	REJECTED(1000000, NB_VERR_BUDGET, 3, MOV64_IMM(9, 0), /* 1 */ MOV64_REG(0, 9),
		 ALU64_IMM(BPF_ADD, 9, 2), JMP_IMM(BPF_JNE, 9, 1001, -3), MOV64_IMM(0, 0), EXIT());
	/* 10^7 iterations: widening proves it ends; one run executes 3 x 10^7 instructions,
	 * over the profiler's 10^6 per run: E-COST at the loop (walking runs out of budget) */
	{
		const struct bpf_insn p_[] = { MOV64_IMM(6, 0), MOV64_IMM(7, 0),
					       ALU64_REG(BPF_ADD, 7, 6), ALU64_IMM(BPF_ADD, 6, 1),
					       JMP_IMM(BPF_JLT, 6, 10000000, -3), MOV64_REG(0, 7),
					       EXIT() };
		struct result r_ = verify(p_, 7, false, 1000000), w_ = verify(p_, 7, true, 1000000);
		CHECK(r_.rc == -EACCES && r_.diag.code == NB_VERR_COST && r_.diag.insn == 4);
		CHECK_STR_CONTAINS(r_.diag.msg, "iterations of up to 3 instructions");
		CHECK(w_.rc == -EACCES && w_.diag.code == NB_VERR_BUDGET && w_.diag.insn == 4);
	}
	/* the 1,000-iteration lookup loop: widening verifies it in a budget walking needs more
	 * than (its run time is the cost bound, not the budget): 2 + 1,000 x 10 + 2 */
	{
		const struct bpf_insn p_[] = {
			MOV64_IMM(7, 0), ST(BPF_W, 10, -4, 0), MOV64_REG(2, 10),
			ALU64_IMM(BPF_ADD, 2, -4), LD_MAP(1, M_ARR), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, 1),
			ALU64_IMM(BPF_ADD, 7, 1), LDX(BPF_W, 1, 10, -4), ALU64_IMM(BPF_ADD, 1, 1),
			STX(BPF_W, 10, 1, -4), JMP_IMM(BPF_JLT, 1, 1000, -11), MOV64_REG(0, 7), EXIT()
		};
		struct result r_ = verify(p_, 15, false, 5000), w_ = verify(p_, 15, true, 5000);
		CHECK(r_.rc == 0 && r_.stats.loops_widened == 1);
		CHECK(r_.stats.max_insns == 10004);
		CHECK(w_.rc == -EACCES && w_.diag.code == NB_VERR_BUDGET && w_.diag.insn == 12);
	}
	/* a counter scrambled on one path (i *= 1 drops the tag: the proof needs exact adds);
	 * walking then runs into the budget */
	REJECTED(20000, NB_VERR_BUDGET, 7, LD_MAP_VALUE(6, M_ONE, 0), MOV64_IMM(9, 0),
		 /* 3 */ LDX(BPF_DW, 3, 6, 0), JMP_IMM(BPF_JEQ, 3, 5, 1), ALU64_IMM(BPF_MUL, 9, 1),
		 ALU64_IMM(BPF_ADD, 9, 1), JMP_IMM(BPF_JLT, 9, 100000, -5), MOV64_IMM(0, 0), EXIT());
}

/* A loop whose counter is fewer than 8 iterations from its exit test's bound is walked,
 * not widened (the same instructions processed as walking): at most 8 exact iterations,
 * where a widened body explores every path the unknown counter allows (regression:
 * bandit_observe's 8-iteration -mcpu=v1 loops, which branch and index on the counter,
 * widened once their zero-extended counter copies were linked: 4,324 -> 5,705 processed).
 * For bodies as small as these, widening would process fewer (64 and 14). */
static void test_short_walked(void)
{
	const struct bpf_insn loops[][20] = {
		/* clang -O2 -mcpu=v1 `for (__u32 i = 0; i < 8; i++) BUMP(i)` */
		{ MOV64_IMM(6, 0), JA(5), /* 2 */ ALU64_IMM(BPF_ADD, 6, 1), MOV64_REG(1, 6),
		  ALU64_IMM(BPF_LSH, 1, 32), ALU64_IMM(BPF_RSH, 1, 32), JMP_IMM(BPF_JEQ, 1, 8, 11),
		  /* 7 */ STX(BPF_W, 10, 6, -4), MOV64_REG(2, 10), ALU64_IMM(BPF_ADD, 2, -4),
		  LD_MAP(1, M_ARR), CALL(1), JMP_IMM(BPF_JEQ, 0, 0, -12), LDX(BPF_DW, 1, 0, 0),
		  ALU64_IMM(BPF_ADD, 1, 1), STX(BPF_DW, 0, 1, 0), JA(-16), /* 18 */ MOV64_IMM(0, 0),
		  EXIT() },
		/* do r7 += r6; while (++r6 < 8) */
		{ MOV64_IMM(6, 0), MOV64_IMM(7, 0), ALU64_REG(BPF_ADD, 7, 6), ALU64_IMM(BPF_ADD, 6, 1),
		  JMP_IMM(BPF_JLT, 6, 8, -3), MOV64_REG(0, 7), EXIT() },
	};
	const size_t len[] = { 20, 7 };
	for (size_t i = 0; i < sizeof(len) / sizeof(len[0]); i++) {
		struct result r = verify(loops[i], len[i], false, 1000000),
			      w = verify(loops[i], len[i], true, 1000000);
		CHECK(r.rc == 0 && w.rc == 0);
		CHECK(r.stats.loops_widened == 0);
		CHECK(r.stats.insns_processed == w.stats.insns_processed);
		if (r.rc || r.stats.loops_widened || r.stats.insns_processed != w.stats.insns_processed)
			fprintf(stderr, "%s:%d: loop %zu: rc %d widened %llu processed %llu (walking "
				"%llu): %s\n", __FILE__, __LINE__, i, r.rc,
				(unsigned long long)r.stats.loops_widened,
				(unsigned long long)r.stats.insns_processed,
				(unsigned long long)w.stats.insns_processed, r.diag.msg);
	}
	/* a near bound that never comes true (k = (k + 1) & 3 tested against 5) does not stop
	 * the widening of the real counter for long: 100,000 iterations in a few hundred */
	WIDENED(400, MOV64_IMM(6, 0), MOV64_IMM(8, 0), /* 2 */ ALU64_IMM(BPF_ADD, 8, 1),
		ALU64_IMM(BPF_AND, 8, 3), JMP_IMM(BPF_JEQ, 8, 5, 2), ALU64_IMM(BPF_ADD, 6, 1),
		JMP_IMM(BPF_JLT, 6, 100000, -5), MOV64_IMM(0, 0), EXIT());
}

/* A map value pointer stepping by 48 bytes with the counter (tuned_rules_pick's rule
 * pointer) widens with it; every way it could leave the table is still rejected. */
static void test_pointer_stride(void)
{
	/* for (i = 0; i < 100; i++, p += 48) if (p->x == 7) return i; 100 x 5 walked */
	WIDENED(60, LD_MAP_VALUE(2, M_RULES, 0), MOV64_IMM(6, 0), /* 3 */ LDX(BPF_W, 3, 2, 8),
		JMP_IMM(BPF_JEQ, 3, 7, 3), ALU64_IMM(BPF_ADD, 2, 48), ALU64_IMM(BPF_ADD, 6, 1),
		JMP_IMM(BPF_JLT, 6, 100, -5), /* 8 */ MOV64_REG(0, 6), EXIT());
	/* counting down from the last rule, an 8-byte field at offset 40 */
	WIDENED(60, LD_MAP_VALUE(2, M_RULES, 0), ALU64_IMM(BPF_ADD, 2, 4752), MOV64_IMM(6, 100),
		/* 4 */ LDX(BPF_DW, 3, 2, 40), JMP_IMM(BPF_JEQ, 3, 7, 3), ALU64_IMM(BPF_ADD, 2, -48),
		ALU64_IMM(BPF_ADD, 6, -1), JMP_IMM(BPF_JGT, 6, 0, -5), /* 9 */ MOV64_REG(0, 6),
		EXIT());
	/* clang's rotated form (tuned_rules_pick at -mcpu=v3): the exit test compares i - 1
	 * (r0 = r5 - 1) and the step is a copy (r0 = r5 + 1): the test bounds r5 and the
	 * pointer through the counter's tag */
	WIDENED(120, LD_MAP_VALUE(2, M_RULES, 0), MOV64_IMM(0, 1), MOV64_IMM(7, 0), JA(6),
		/* 5 */ MOV64_REG(0, 5), ALU64_IMM(BPF_ADD, 0, -1), JMP_IMM(BPF_JGT, 0, 98, 8),
		ALU64_IMM(BPF_ADD, 2, 48), MOV64_REG(0, 5), ALU64_IMM(BPF_ADD, 0, 1),
		/* 11 */ MOV64_REG(5, 0), LDX(BPF_W, 3, 2, 44), JMP_IMM(BPF_JEQ, 3, 7, 2),
		ALU64_IMM(BPF_ADD, 3, 1), JA(-11), /* 16 */ MOV64_REG(0, 5), EXIT());
	/* one rule too many: the 101st read is past the table */
	REJECTED(1000000, NB_VERR_MAP_VALUE_OOB, 3, LD_MAP_VALUE(2, M_RULES, 0), MOV64_IMM(6, 0),
		 /* 3 */ LDX(BPF_W, 3, 2, 8), ALU64_IMM(BPF_ADD, 2, 48), ALU64_IMM(BPF_ADD, 6, 1),
		 JMP_IMM(BPF_JLT, 6, 101, -4), MOV64_IMM(0, 0), EXIT());
	/* the pointer steps twice on some path (a rule skipped): not the counter's step */
	REJECTED(1000000, NB_VERR_MAP_VALUE_OOB, 3, LD_MAP_VALUE(2, M_RULES, 0), MOV64_IMM(6, 0),
		 /* 3 */ LDX(BPF_W, 3, 2, 8), JMP_IMM(BPF_JEQ, 3, 0, 1), ALU64_IMM(BPF_ADD, 2, 48),
		 ALU64_IMM(BPF_ADD, 2, 48), ALU64_IMM(BPF_ADD, 6, 1), JMP_IMM(BPF_JLT, 6, 100, -6),
		 MOV64_IMM(0, 0), EXIT());
	/* a variable step on some path (p += x & 48) */
	REJECTED(1000000, NB_VERR_MAP_VALUE_OOB, 3, LD_MAP_VALUE(2, M_RULES, 0), MOV64_IMM(6, 0),
		 /* 3 */ LDX(BPF_W, 3, 2, 8), ALU64_IMM(BPF_AND, 3, 48), ALU64_REG(BPF_ADD, 2, 3),
		 ALU64_IMM(BPF_ADD, 2, 48), ALU64_IMM(BPF_ADD, 6, 1), JMP_IMM(BPF_JLT, 6, 100, -6),
		 MOV64_IMM(0, 0), EXIT());
	/* an outer loop runs the inner one twice without resetting the pointer: 120 rules */
	REJECTED(1000000, NB_VERR_MAP_VALUE_OOB, 4, LD_MAP_VALUE(2, M_RULES, 0), MOV64_IMM(7, 0),
		 /* 3 */ MOV64_IMM(6, 0), /* 4 */ LDX(BPF_W, 3, 2, 8), ALU64_IMM(BPF_ADD, 2, 48),
		 ALU64_IMM(BPF_ADD, 6, 1), JMP_IMM(BPF_JLT, 6, 60, -4), ALU64_IMM(BPF_ADD, 7, 1),
		 JMP_IMM(BPF_JLT, 7, 2, -7), MOV64_IMM(0, 0), EXIT());
	/* the counter restarts at 50 while the pointer goes on */
	REJECTED(1000000, NB_VERR_MAP_VALUE_OOB, 3, LD_MAP_VALUE(2, M_RULES, 0), MOV64_IMM(6, 0),
		 /* 3 */ LDX(BPF_W, 3, 2, 8), ALU64_IMM(BPF_ADD, 2, 48), ALU64_IMM(BPF_ADD, 6, 1),
		 JMP_IMM(BPF_JNE, 6, 50, 1), MOV64_IMM(6, 1), JMP_IMM(BPF_JLT, 6, 100, -6),
		 MOV64_IMM(0, 0), EXIT());
}

/* A stored state keeps what changed since the path's previous one: a walked loop over a
 * stack of 32 spilled numbers, spilling its counter on every iteration, stores a state at
 * (nearly) every visit of its head; each costs about a kilobyte (record, register
 * pointers, the counter's register and slot), not a copy of every register and slot
 * (11 x 96 + 32 x 112 bytes and the record: 4.9 KB; a short verification's time is mostly
 * first-touch memory). Registers no later instruction reads (r2 here) are dropped. */
static void test_state_memory(void)
{
	struct bpf_insn p[48];
	size_t n = 0;
	p[n++] = MOV64_IMM(1, 7);
	for (int i = 1; i <= 32; i++)
		p[n++] = STX(BPF_DW, 10, 1, (int16_t)(-8 * i));
	p[n++] = MOV64_IMM(6, 0);
	size_t head = n;
	p[n++] = MOV64_IMM(2, 0); /* dead at the head: overwritten before any read */
	p[n++] = STX(BPF_DW, 10, 6, -8);
	p[n++] = ALU64_REG(BPF_ADD, 2, 6);
	p[n++] = ALU64_IMM(BPF_ADD, 6, 1);
	p[n] = JMP_IMM(BPF_JLT, 6, 40, (int16_t)((int64_t)head - (int64_t)n - 1));
	n++;
	p[n++] = MOV64_REG(0, 2);
	p[n++] = EXIT();
	struct result r = verify(p, n, true, 1000000);
	CHECK(r.rc == 0 && r.stats.states_stored >= 8);
	uint64_t per = r.stats.states_stored ? r.stats.state_bytes / r.stats.states_stored : 0;
	CHECK(per > 0 && per <= 1536);
	if (r.rc || r.stats.states_stored < 8 || per == 0 || per > 1536)
		fprintf(stderr, "%s:%d: rc %d, %llu states stored, %llu bytes each: %s\n", __FILE__,
			__LINE__, r.rc, (unsigned long long)r.stats.states_stored,
			(unsigned long long)per, r.diag.msg);
}

int main(void)
{
	test_state_memory();
	test_pointer_stride();
	test_accepted();
	test_rejected();
	test_rotated();
	test_zext_copy();
	test_short_walked();
	TEST_DONE();
}

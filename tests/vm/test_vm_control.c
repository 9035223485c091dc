/* Interpreter control flow: every JMP/JMP32 condition taken and not taken over signed and
 * unsigned boundary values (against a reference written here), ja/gotol, local calls
 * (arguments, r6-r9 preserved, separate stacks, depth limit), helper calls. */
#include <errno.h>

#include "vm/vm_test_harness.h"

static const uint64_t bounds[] = {
	0, 1, 2, 0xffffffffffffffffull, 0x8000000000000000ull, 0x7fffffffffffffffull,
	0x7fffffffull, 0x80000000ull, 0xffffffffull, 0x100000000ull, 0xffffffff80000000ull,
	0x17fffffffull,
};
static const uint8_t conds[] = { BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JGE, BPF_JLT, BPF_JLE,
				 BPF_JSET, BPF_JSGT, BPF_JSGE, BPF_JSLT, BPF_JSLE };

static int ref_cond(uint8_t op, uint64_t a, uint64_t b, int is32)
{
	if (is32) {
		uint32_t x = (uint32_t)a, y = (uint32_t)b;
		int32_t sx = (int32_t)x, sy = (int32_t)y;
		switch (op) {
		case BPF_JEQ: return x == y;
		case BPF_JNE: return x != y;
		case BPF_JGT: return x > y;
		case BPF_JGE: return x >= y;
		case BPF_JLT: return x < y;
		case BPF_JLE: return x <= y;
		case BPF_JSET: return (x & y) != 0;
		case BPF_JSGT: return sx > sy;
		case BPF_JSGE: return sx >= sy;
		case BPF_JSLT: return sx < sy;
		default: return sx <= sy;
		}
	}
	int64_t sa = (int64_t)a, sb = (int64_t)b;
	switch (op) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	case BPF_JLT: return a < b;
	case BPF_JLE: return a <= b;
	case BPF_JSET: return (a & b) != 0;
	case BPF_JSGT: return sa > sb;
	case BPF_JSGE: return sa >= sb;
	case BPF_JSLT: return sa < sb;
	default: return sa <= sb;
	}
}

static void test_conditions(void)
{
	int taken[4] = { 0 }, not_taken[4] = { 0 };
	size_t nb = sizeof(bounds) / sizeof(bounds[0]);
	for (size_t c = 0; c < sizeof(conds); c++) {
		for (size_t i = 0; i < nb; i++) {
			for (size_t j = 0; j < nb; j++) {
				uint64_t a = bounds[i], b = bounds[j];
				int32_t k = (int32_t)(uint32_t)b; /* K form: imm sign-extended */
				uint64_t bk = (uint64_t)(int64_t)k;
				int want[4] = { ref_cond(conds[c], a, b, 0), ref_cond(conds[c], a, bk, 0),
						ref_cond(conds[c], a, b, 1),
						ref_cond(conds[c], a, bk, 1) };
				struct run_result r[4] = {
					RUN(LDDW(1, a), LDDW(2, b), MOV64_K(0, 0),
					    JMP_X(conds[c], 1, 2, 1), EXIT(), MOV64_K(0, 1), EXIT()),
					RUN(LDDW(1, a), MOV64_K(0, 0), JMP_K(conds[c], 1, k, 1), EXIT(),
					    MOV64_K(0, 1), EXIT()),
					RUN(LDDW(1, a), LDDW(2, b), MOV64_K(0, 0),
					    JMP32_X(conds[c], 1, 2, 1), EXIT(), MOV64_K(0, 1), EXIT()),
					RUN(LDDW(1, a), MOV64_K(0, 0), JMP32_K(conds[c], 1, k, 1), EXIT(),
					    MOV64_K(0, 1), EXIT()),
				};
				for (int f = 0; f < 4; f++) {
					test_checks++;
					if (r[f].rc || r[f].r0 != (uint64_t)want[f]) {
						test_failures++;
						fprintf(stderr, "cond 0x%x form %d a=0x%llx b=0x%llx: got %llu\n",
							conds[c], f, (unsigned long long)a,
							(unsigned long long)b, (unsigned long long)r[f].r0);
					}
					(want[f] ? taken : not_taken)[f]++;
				}
			}
		}
	}
	for (int f = 0; f < 4; f++)
		CHECK(taken[f] > 100 && not_taken[f] > 100); /* both outcomes exercised */
	/* backward jumps: a counted loop */
	EXPECT(55, MOV64_K(0, 0), MOV64_K(1, 10), ALU64_X(BPF_ADD, 0, 1), ALU64_K(BPF_SUB, 1, 1),
	       JMP_K(BPF_JNE, 1, 0, -3), EXIT());
	EXPECT(55, MOV64_K(0, 0), MOV64_K(1, 10), ALU64_X(BPF_ADD, 0, 1), ALU32_K(BPF_SUB, 1, 1),
	       JMP32_K(BPF_JSGT, 1, 0, -3), EXIT());
}

static void test_ja(void)
{
	EXPECT(1, MOV64_K(0, 1), JA(1), MOV64_K(0, 2), EXIT());
	EXPECT(1, MOV64_K(0, 1), JA32(1), MOV64_K(0, 2), EXIT());
	EXPECT(3, MOV64_K(0, 0), JA(2), ALU64_K(BPF_ADD, 0, 1), EXIT(), ALU64_K(BPF_ADD, 0, 2),
	       JA(-4));
	EXPECT(3, MOV64_K(0, 0), JA32(2), ALU64_K(BPF_ADD, 0, 1), EXIT(), ALU64_K(BPF_ADD, 0, 2),
	       JA32(-4));
	EXPECT(7, MOV64_K(0, 7), JA(0), EXIT());
	EXPECT(9, MOV64_K(0, 9), JA(2), LDDW(0, 5), EXIT()); /* jump over an lddw */
}

static void test_local_calls(void)
{
	/* arguments in r1-r5, result in r0; r6-r9 preserved across the call */
	EXPECT(6 + 7 + 8 + 9 + (1 * 100 + 2 * 10 + 3 + 4 + 5),
	       MOV64_K(6, 6), MOV64_K(7, 7), MOV64_K(8, 8), MOV64_K(9, 9), MOV64_K(1, 1),
	       MOV64_K(2, 2), MOV64_K(3, 3), MOV64_K(4, 4), MOV64_K(5, 5), CALL_LOCAL(5),
	       ALU64_X(BPF_ADD, 0, 6), ALU64_X(BPF_ADD, 0, 7), ALU64_X(BPF_ADD, 0, 8),
	       ALU64_X(BPF_ADD, 0, 9), EXIT(),
	       /* sub at 15: clobbers r6-r9 */
	       MOV64_X(0, 1), ALU64_K(BPF_MUL, 0, 100), MOV64_X(6, 2), ALU64_K(BPF_MUL, 6, 10),
	       ALU64_X(BPF_ADD, 0, 6), ALU64_X(BPF_ADD, 0, 3), ALU64_X(BPF_ADD, 0, 4),
	       ALU64_X(BPF_ADD, 0, 5), MOV64_K(7, 0), MOV64_K(8, 0), MOV64_K(9, 0), EXIT());
	/* separate stacks: the callee's r10-8 is not the caller's; r10 restored on return */
	EXPECT(0x1111,
	       ST(BPF_DW, 10, -8, 0x1111), MOV64_X(6, 10), CALL_LOCAL(5), JMP_X(BPF_JNE, 6, 10, 2),
	       LDX(BPF_DW, 0, 10, -8), EXIT(), MOV64_K(0, -1), EXIT(),
	       /* sub at 8 */
	       ST(BPF_DW, 10, -8, 0x2222), LDX(BPF_DW, 0, 10, -8), EXIT());
	/* callee frame differs from the caller's by at least a whole stack */
	struct run_result r = RUN(MOV64_X(6, 10), CALL_LOCAL(2), ALU64_X(BPF_SUB, 0, 6), EXIT(),
				  MOV64_X(0, 10), EXIT());
	CHECK(r.rc == 0);
	CHECK((int64_t)r.r0 >= BPF_STACK_SIZE || (int64_t)r.r0 <= -BPF_STACK_SIZE);
	/* the caller's stack stays reachable through a pointer */
	EXPECT(0x33, ST(BPF_DW, 10, -16, 0x33), MOV64_X(1, 10), ALU64_K(BPF_ADD, 1, -16),
	       CALL_LOCAL(1), EXIT(), LDX(BPF_DW, 0, 1, 0), EXIT());
}

/* f(n) = n == 0 ? 0 : f(n - 1) + 1, called from main: n + 2 frames in all */
static struct run_result run_recursion(int n)
{
	return RUN(MOV64_K(1, n), CALL_LOCAL(1), EXIT(),
		   /* f at 3 */
		   MOV64_K(0, 0), JMP_K(BPF_JEQ, 1, 0, 3), ALU64_K(BPF_SUB, 1, 1), CALL_LOCAL(-4),
		   ALU64_K(BPF_ADD, 0, 1), EXIT());
}

static void test_call_depth(void)
{
	struct run_result r = run_recursion(BPF_MAX_CALL_DEPTH - 2); /* 8 frames */
	CHECK(r.rc == 0);
	CHECK_EQ_U64(r.r0, BPF_MAX_CALL_DEPTH - 2);
	r = run_recursion(BPF_MAX_CALL_DEPTH - 1); /* 9 frames */
	CHECK(r.rc == -EFAULT);
	CHECK(r.fault.kind == VM_FAULT_CALL_DEPTH);
	CHECK(r.fault.pc == 6);
	CHECK_STR_CONTAINS(r.fault.msg, "insn 6: call depth exceeds 8 frames");
	r = run_recursion(1000);
	CHECK(r.fault.kind == VM_FAULT_CALL_DEPTH);
}

static uint64_t h_identity(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)b, (void)c, (void)d, (void)e;
	return a;
}

static uint64_t h_mix(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	return a * 10000 + b * 1000 + c * 100 + d * 10 + e;
}

static void test_helper_calls(void)
{
	test_helpers[NB_HELPER_CONFORMANCE_IDENTITY] = h_identity;
	test_helpers[7] = h_mix;
	EXPECT(42, MOV64_K(1, 42), CALL(5), EXIT());
	EXPECT(12345, MOV64_K(1, 1), MOV64_K(2, 2), MOV64_K(3, 3), MOV64_K(4, 4), MOV64_K(5, 5),
	       CALL(7), EXIT());
	/* r6-r9 survive helper calls */
	EXPECT(9, MOV64_K(9, 9), MOV64_K(1, 0), CALL(5), MOV64_X(0, 9), EXIT());
	struct run_result r = RUN(MOV64_K(0, 0), CALL(99), EXIT());
	CHECK(r.rc == -EFAULT && r.fault.kind == VM_FAULT_BAD_HELPER);
	CHECK_STR_CONTAINS(r.fault.msg, "insn 1: call to unavailable helper 99");
	r = RUN(CALL(NB_HELPER_MAX + 3), EXIT());
	CHECK(r.rc == -EFAULT && r.fault.kind == VM_FAULT_BAD_HELPER);
	/* no helper table at all */
	struct vm_program p = { PROG(CALL(5), EXIT()), 2, NULL, NULL };
	struct vm_fault f;
	uint64_t r0;
	CHECK(vm_interp_run(&p, 0, 0, &r0, NULL, &f) == -EFAULT);
	CHECK(f.kind == VM_FAULT_BAD_HELPER);
	/* an invalid opcode faults instead of executing anything */
	struct vm_program bad = { PROG(INSN(0xff, 0, 0, 0, 0), EXIT()), 2, NULL, NULL };
	CHECK(vm_interp_run(&bad, 0, 0, &r0, NULL, &f) == -EFAULT);
	CHECK(f.kind == VM_FAULT_BAD_INSN);
	CHECK(vm_interp_run(&bad, 0, 0, &r0, NULL, NULL) == -EFAULT); /* fault optional */
}

int main(void)
{
	test_conditions();
	test_ja();
	test_local_calls();
	test_call_depth();
	test_helper_calls();
	TEST_DONE();
}

/* Interpreter loads, stores and atomics: every size, sign-extending loads, store
 * immediates, stack and caller memory, and every atomic operation in both widths with and
 * without FETCH, XCHG and CMPXCHG success/failure. */
#include "vm/vm_test_harness.h"

static const uint8_t mem16[16] = { 0x81, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88,
				   0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08 };

#define LOAD_EXPECT(want, insn)                                                             \
	do {                                                                                \
		struct run_result r_ = RUN_MEM(mem16, 16, insn, EXIT());                    \
		CHECK(r_.rc == 0);                                                          \
		CHECK_EQ_U64(r_.r0, want);                                                  \
	} while (0)

static void test_loads(void)
{
	LOAD_EXPECT(0x81, LDX(BPF_B, 0, 1, 0));
	LOAD_EXPECT(0x8281, LDX(BPF_H, 0, 1, 0));
	LOAD_EXPECT(0x84838281, LDX(BPF_W, 0, 1, 0));
	LOAD_EXPECT(0x8887868584838281ull, LDX(BPF_DW, 0, 1, 0));
	LOAD_EXPECT(0x0807060504030201ull, LDX(BPF_DW, 0, 1, 8));
	LOAD_EXPECT(0x04030201, LDX(BPF_W, 0, 1, 8));
	LOAD_EXPECT(0x03, LDX(BPF_B, 0, 1, 10));
	LOAD_EXPECT(0x0201, LDX(BPF_H, 0, 1, 8));
	LOAD_EXPECT(0x02018887, LDX(BPF_W, 0, 1, 6)); /* unaligned */
	/* sign-extending loads */
	LOAD_EXPECT(0xffffffffffffff81ull, LDXSX(BPF_B, 0, 1, 0));
	LOAD_EXPECT(0x01, LDXSX(BPF_B, 0, 1, 8));
	LOAD_EXPECT(0xffffffffffff8281ull, LDXSX(BPF_H, 0, 1, 0));
	LOAD_EXPECT(0x0201, LDXSX(BPF_H, 0, 1, 8));
	LOAD_EXPECT(0xffffffff84838281ull, LDXSX(BPF_W, 0, 1, 0));
	LOAD_EXPECT(0x04030201, LDXSX(BPF_W, 0, 1, 8));
	/* negative offsets from an advanced pointer */
	struct run_result r = RUN_MEM(mem16, 16, ALU64_K(BPF_ADD, 1, 16), LDX(BPF_H, 0, 1, -2),
				      EXIT());
	CHECK(r.rc == 0);
	CHECK_EQ_U64(r.r0, 0x0807);
	/* r2 carries the length */
	r = RUN_MEM(mem16, 16, MOV64_X(0, 2), EXIT());
	CHECK_EQ_U64(r.r0, 16);
}

static void test_stores(void)
{
	static const uint8_t zero[16];
	struct run_result r = RUN_MEM(zero, 16, ST(BPF_B, 1, 0, 0x1ff), ST(BPF_H, 1, 2, -2),
				      ST(BPF_W, 1, 4, 0x11223344), ST(BPF_DW, 1, 8, -3),
				      MOV64_K(0, 0), EXIT());
	static const uint8_t want1[16] = { 0xff, 0, 0xfe, 0xff, 0x44, 0x33, 0x22, 0x11,
					   0xfd, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
	CHECK(r.rc == 0);
	CHECK(memcmp(r.mem, want1, 16) == 0);
	r = RUN_MEM(zero, 16, LDDW(2, 0x1122334455667788ull), STX(BPF_B, 1, 2, 0),
		    STX(BPF_H, 1, 2, 2), STX(BPF_W, 1, 2, 4), STX(BPF_DW, 1, 2, 8), MOV64_K(0, 0),
		    EXIT());
	static const uint8_t want2[16] = { 0x88, 0, 0x88, 0x77, 0x88, 0x77, 0x66, 0x55,
					   0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11 };
	CHECK(memcmp(r.mem, want2, 16) == 0);
	/* ST W writes only 4 bytes even with a negative immediate */
	EXPECT(0x00000000ffffffffull, ST(BPF_DW, 10, -8, 0), ST(BPF_W, 10, -8, -1),
	       LDX(BPF_DW, 0, 10, -8), EXIT());
	/* stack: whole 512 bytes usable */
	EXPECT(0xabcdef, LDDW(1, 0xabcdef), STX(BPF_DW, 10, 1, -512), LDX(BPF_DW, 0, 10, -512),
	       EXIT());
	EXPECT(0x5a, ST(BPF_B, 10, -1, 0x5a), LDX(BPF_B, 0, 10, -1), EXIT());
}

/* reference of one atomic op on a value of the given width */
static uint64_t ref_op(int32_t op, uint64_t m, uint64_t s)
{
	switch (op & ~BPF_FETCH) {
	case BPF_ADD: return m + s;
	case BPF_OR: return m | s;
	case BPF_AND: return m & s;
	case BPF_XOR: return m ^ s;
	default: return s; /* xchg */
	}
}

static void test_atomics(void)
{
	static const int32_t ops[] = { BPF_ADD, BPF_OR, BPF_AND, BPF_XOR,
				       BPF_ADD | BPF_FETCH, BPF_OR | BPF_FETCH,
				       BPF_AND | BPF_FETCH, BPF_XOR | BPF_FETCH, BPF_XCHG };
	const uint64_t m = 0xf0f0f0f0fffffff0ull;
	const uint64_t s = 0xdeadbeef0000ff3full;
	uint8_t mem[16];
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		for (int dw = 0; dw < 2; dw++) {
			memcpy(mem, &m, 8);
			memcpy(mem + 8, &m, 8);
			/* r2 = s; atomic on mem[8]; r0 = r2 */
			struct run_result r = RUN_MEM(mem, 16, LDDW(2, s),
						      ATOMIC(dw ? BPF_DW : BPF_W, 1, 2, 8, ops[i]),
						      MOV64_X(0, 2), EXIT());
			uint64_t want_mem, want_r0, got_mem;
			if (dw) {
				want_mem = ref_op(ops[i], m, s);
				want_r0 = (ops[i] & BPF_FETCH) ? m : s;
			} else {
				uint32_t nm = (uint32_t)ref_op(ops[i], (uint32_t)m, (uint32_t)s);
				want_mem = (m & 0xffffffff00000000ull) | nm; /* upper bytes untouched */
				want_r0 = (ops[i] & BPF_FETCH) ? (uint32_t)m : s; /* zero-extended */
			}
			memcpy(&got_mem, r.mem + 8, 8);
			CHECK(r.rc == 0);
			test_checks++;
			if (got_mem != want_mem || r.r0 != want_r0 || memcmp(r.mem, &m, 8)) {
				test_failures++;
				fprintf(stderr, "atomic 0x%x %s: mem 0x%llx (want 0x%llx) r0 0x%llx "
						"(want 0x%llx)\n",
					ops[i], dw ? "dw" : "w", (unsigned long long)got_mem,
					(unsigned long long)want_mem, (unsigned long long)r.r0,
					(unsigned long long)want_r0);
			}
		}
	}
	/* atomics on the stack */
	EXPECT(12, ST(BPF_DW, 10, -8, 5), MOV64_K(1, 7), ATOMIC(BPF_DW, 10, 1, -8, BPF_ADD),
	       LDX(BPF_DW, 0, 10, -8), EXIT());
}

static void test_cmpxchg(void)
{
	const uint64_t m = 0x1111111122222222ull;
	uint8_t mem[8];
	memcpy(mem, &m, 8);
	/* DW success: memory replaced, r0 = old */
	struct run_result r = RUN_MEM(mem, 8, LDDW(0, m), LDDW(2, 0x77), 
				      ATOMIC(BPF_DW, 1, 2, 0, BPF_CMPXCHG), EXIT());
	uint64_t got;
	memcpy(&got, r.mem, 8);
	CHECK(r.rc == 0 && r.r0 == m && got == 0x77);
	/* DW failure: memory unchanged, r0 = current value */
	r = RUN_MEM(mem, 8, LDDW(0, m + 1), LDDW(2, 0x77), ATOMIC(BPF_DW, 1, 2, 0, BPF_CMPXCHG),
		    EXIT());
	memcpy(&got, r.mem, 8);
	CHECK(r.rc == 0 && r.r0 == m && got == m);
	/* W success compares only the low 32 bits of r0, result zero-extended */
	r = RUN_MEM(mem, 8, LDDW(0, 0xabcdef0022222222ull), LDDW(2, 0x9999999933333333ull),
		    ATOMIC(BPF_W, 1, 2, 0, BPF_CMPXCHG), EXIT());
	memcpy(&got, r.mem, 8);
	CHECK(r.rc == 0);
	CHECK_EQ_U64(r.r0, 0x22222222);
	CHECK_EQ_U64(got, 0x1111111133333333ull);
	/* W failure */
	r = RUN_MEM(mem, 8, LDDW(0, 0x22222223), MOV64_K(2, 5), ATOMIC(BPF_W, 1, 2, 0, BPF_CMPXCHG),
		    EXIT());
	memcpy(&got, r.mem, 8);
	CHECK_EQ_U64(r.r0, 0x22222222);
	CHECK_EQ_U64(got, m);
	/* src register untouched by cmpxchg */
	r = RUN_MEM(mem, 8, LDDW(0, m), MOV64_K(2, 5), ATOMIC(BPF_DW, 1, 2, 0, BPF_CMPXCHG),
		    MOV64_X(0, 2), EXIT());
	CHECK_EQ_U64(r.r0, 5);
}

int main(void)
{
	test_loads();
	test_stores();
	test_atomics();
	test_cmpxchg();
	TEST_DONE();
}

/* Interpreter ALU semantics (RFC 9669): every ALU/ALU64 operation in K and X form, with the
 * edge cases the RFC pins down: division by zero, modulo by zero, INT_MIN / -1, shift
 * masking, 32-bit zero extension, NEG, MOVSX, byte swaps, LDDW. Each program runs in
 * unchecked and checked mode (vm_test_harness.h). */
#include "vm/vm_test_harness.h"

#define I64MIN 0x8000000000000000ull
#define ALL1 0xffffffffffffffffull
#define BIN_X(insn, a, b, want) EXPECT(want, LDDW(0, a), LDDW(1, b), insn, EXIT())
#define BIN_K(insn, a, want) EXPECT(want, LDDW(0, a), insn, EXIT())

static void test_add_sub_mul(void)
{
	BIN_K(ALU64_K(BPF_ADD, 0, 1), ALL1, 0);
	BIN_K(ALU64_K(BPF_ADD, 0, -1), 0, ALL1); /* imm sign-extended */
	BIN_X(ALU64_X(BPF_ADD, 0, 1), 0x100000000ull, 0xffffffffull, 0x1ffffffffull);
	BIN_K(ALU32_K(BPF_ADD, 0, 1), 0xffffffffull, 0);
	BIN_K(ALU32_K(BPF_ADD, 0, 1), 0x1234567800000001ull, 2); /* upper half cleared */
	BIN_X(ALU32_X(BPF_ADD, 0, 1), 0xaaaaaaaa00000001ull, 0xbbbbbbbb00000002ull, 3);
	BIN_K(ALU64_K(BPF_SUB, 0, 1), 0, ALL1);
	BIN_X(ALU64_X(BPF_SUB, 0, 1), 10, 3, 7);
	BIN_K(ALU32_K(BPF_SUB, 0, 1), 0, 0xffffffffull);
	BIN_X(ALU32_X(BPF_SUB, 0, 1), 0xffffffff00000005ull, 7, 0xfffffffeull);
	BIN_K(ALU64_K(BPF_MUL, 0, 3), 0x100000001ull, 0x300000003ull);
	BIN_K(ALU64_K(BPF_MUL, 0, -1), I64MIN, I64MIN);
	BIN_X(ALU64_X(BPF_MUL, 0, 1), 0x100000000ull, 0x100000000ull, 0);
	BIN_X(ALU32_X(BPF_MUL, 0, 1), 0x10000, 0x10000, 0);
	BIN_K(ALU32_K(BPF_MUL, 0, 5), 0xffffffff00000003ull, 15);
	BIN_K(ALU32_K(BPF_MUL, 0, -1), 2, 0xfffffffeull);
}

static void test_div_mod(void)
{
	/* unsigned */
	BIN_X(ALU64_X(BPF_DIV, 0, 1), ALL1, 2, 0x7fffffffffffffffull);
	BIN_K(ALU64_K(BPF_DIV, 0, -1), 5, 0); /* imm -1 is 2^64-1 unsigned */
	BIN_K(ALU64_K(BPF_DIV, 0, 7), 100, 14);
	BIN_K(ALU32_K(BPF_DIV, 0, -1), 0xfffffffeull, 0);
	BIN_X(ALU32_X(BPF_DIV, 0, 1), 0x1200000064ull, 0x300000007ull, 14); /* low halves */
	BIN_X(ALU64_X(BPF_MOD, 0, 1), 100, 7, 2);
	BIN_K(ALU64_K(BPF_MOD, 0, 7), 100, 2);
	BIN_K(ALU32_K(BPF_MOD, 0, 7), 0xff00000064ull, 2);
	BIN_X(ALU32_X(BPF_MOD, 0, 1), 100, 0x100000007ull, 2);
	/* division by zero: 0, both widths, K and X */
	BIN_K(ALU64_K(BPF_DIV, 0, 0), 0x1234567890ull, 0);
	BIN_X(ALU64_X(BPF_DIV, 0, 1), 0x1234567890ull, 0, 0);
	BIN_K(ALU32_K(BPF_DIV, 0, 0), 0x1234567890ull, 0);
	BIN_X(ALU32_X(BPF_DIV, 0, 1), 0x1234567890ull, 0, 0);
	BIN_X(ALU32_X(BPF_DIV, 0, 1), 0x1234567890ull, 0x100000000ull, 0); /* low half 0 */
	/* modulo by zero: dst unchanged; 32-bit: zero-extended low half */
	BIN_K(ALU64_K(BPF_MOD, 0, 0), 0x1234567890ull, 0x1234567890ull);
	BIN_X(ALU64_X(BPF_MOD, 0, 1), 0x1234567890ull, 0, 0x1234567890ull);
	BIN_K(ALU32_K(BPF_MOD, 0, 0), 0xaaaaaaaa12345678ull, 0x12345678ull);
	BIN_X(ALU32_X(BPF_MOD, 0, 1), 0xaaaaaaaa12345678ull, 0, 0x12345678ull);
	BIN_X(ALU32_X(BPF_MOD, 0, 1), 0xaaaaaaaa12345678ull, 0x500000000ull, 0x12345678ull);
	/* signed (off = 1) */
	BIN_X(SALU64_X(BPF_DIV, 0, 1), (uint64_t)-7, 2, (uint64_t)-3);
	BIN_K(SALU64_K(BPF_DIV, 0, -2), (uint64_t)-8, 4);
	BIN_X(SALU64_X(BPF_DIV, 0, 1), I64MIN, ALL1, I64MIN); /* INT64_MIN / -1 */
	BIN_K(SALU64_K(BPF_DIV, 0, -1), I64MIN, I64MIN);
	BIN_X(SALU64_X(BPF_DIV, 0, 1), (uint64_t)-7, 0, 0);
	BIN_K(SALU64_K(BPF_DIV, 0, 0), (uint64_t)-7, 0);
	BIN_X(SALU64_X(BPF_MOD, 0, 1), (uint64_t)-7, 2, (uint64_t)-1);
	BIN_X(SALU64_X(BPF_MOD, 0, 1), 7, (uint64_t)-2, 1);
	BIN_X(SALU64_X(BPF_MOD, 0, 1), I64MIN, ALL1, 0); /* INT64_MIN % -1 */
	BIN_K(SALU64_K(BPF_MOD, 0, -1), I64MIN, 0);
	BIN_X(SALU64_X(BPF_MOD, 0, 1), (uint64_t)-7, 0, (uint64_t)-7);
	BIN_K(SALU64_K(BPF_MOD, 0, 0), (uint64_t)-7, (uint64_t)-7);
	BIN_X(SALU32_X(BPF_DIV, 0, 1), 0xfffffff9ull, 2, 0xfffffffdull); /* -7/2, zero-ext */
	BIN_K(SALU32_K(BPF_DIV, 0, -2), 0x12345678fffffff8ull, 4);
	BIN_X(SALU32_X(BPF_DIV, 0, 1), 0x80000000ull, 0xffffffffull, 0x80000000ull);
	BIN_K(SALU32_K(BPF_DIV, 0, -1), 0x80000000ull, 0x80000000ull);
	BIN_K(SALU32_K(BPF_DIV, 0, 0), 0xfffffff9ull, 0);
	BIN_X(SALU32_X(BPF_MOD, 0, 1), 0xfffffff9ull, 2, 0xffffffffull); /* -7 % 2 = -1 */
	BIN_X(SALU32_X(BPF_MOD, 0, 1), 0x80000000ull, 0xffffffffull, 0);
	BIN_K(SALU32_K(BPF_MOD, 0, -1), 0x80000000ull, 0);
	BIN_K(SALU32_K(BPF_MOD, 0, 0), 0xfffffffffffffff9ull, 0xfffffff9ull);
	BIN_X(SALU32_X(BPF_MOD, 0, 1), 0xfffffffffffffff9ull, 0xab00000000ull, 0xfffffff9ull);
}

static void test_bitwise_shift(void)
{
	BIN_K(ALU64_K(BPF_OR, 0, -16), 0, 0xfffffffffffffff0ull);
	BIN_K(ALU32_K(BPF_OR, 0, 1), 0xffffffff00000000ull, 1);
	BIN_X(ALU32_X(BPF_OR, 0, 1), 0xffffffff00000000ull, 0xffffffff00000002ull, 2);
	BIN_K(ALU64_K(BPF_AND, 0, -1), 0x123456789abcdef0ull, 0x123456789abcdef0ull);
	BIN_K(ALU32_K(BPF_AND, 0, -1), 0x123456789abcdef0ull, 0x9abcdef0ull);
	BIN_X(ALU64_X(BPF_AND, 0, 1), 0xff00ff00ff00ff00ull, 0x0ff00ff00ff00ff0ull,
	      0x0f000f000f000f00ull);
	BIN_K(ALU64_K(BPF_XOR, 0, -1), 0, ALL1);
	BIN_K(ALU32_K(BPF_XOR, 0, -1), 0, 0xffffffffull);
	BIN_X(ALU64_X(BPF_XOR, 0, 1), 0xf0f0, 0xffff, 0x0f0f);
	BIN_X(ALU32_X(BPF_XOR, 0, 1), ALL1, 1, 0xfffffffeull);
	/* shifts: amounts masked to 63 / 31 */
	BIN_K(ALU64_K(BPF_LSH, 0, 63), 1, I64MIN);
	BIN_K(ALU64_K(BPF_LSH, 0, 65), 1, 2);
	BIN_X(ALU64_X(BPF_LSH, 0, 1), 3, 64, 3);
	BIN_X(ALU64_X(BPF_LSH, 0, 1), 3, 65, 6);
	BIN_X(ALU64_X(BPF_LSH, 0, 1), 1, ALL1, I64MIN); /* -1 & 63 = 63 */
	BIN_K(ALU64_K(BPF_LSH, 0, -1), 1, I64MIN);
	BIN_K(ALU32_K(BPF_LSH, 0, 31), 1, 0x80000000ull);
	BIN_K(ALU32_K(BPF_LSH, 0, 1), 0x80000000ull, 0); /* no carry into bit 32 */
	BIN_X(ALU32_X(BPF_LSH, 0, 1), 0xdead00000003ull, 32, 3);
	BIN_X(ALU32_X(BPF_LSH, 0, 1), 3, 33, 6);
	BIN_X(ALU32_X(BPF_LSH, 0, 1), 1, ALL1, 0x80000000ull);
	BIN_K(ALU64_K(BPF_RSH, 0, 63), I64MIN, 1);
	BIN_X(ALU64_X(BPF_RSH, 0, 1), I64MIN, 127, 1);
	BIN_X(ALU64_X(BPF_RSH, 0, 1), 0x80, 64, 0x80);
	BIN_K(ALU32_K(BPF_RSH, 0, 31), 0xffffffff80000000ull, 1);
	BIN_X(ALU32_X(BPF_RSH, 0, 1), 0xffffffff80000000ull, 32, 0x80000000ull);
	BIN_X(ALU32_X(BPF_RSH, 0, 1), 0x80000000ull, 0xffffffffull, 1);
	BIN_K(ALU64_K(BPF_ARSH, 0, 63), I64MIN, ALL1);
	BIN_K(ALU64_K(BPF_ARSH, 0, 4), 0x7000000000000000ull, 0x0700000000000000ull);
	BIN_X(ALU64_X(BPF_ARSH, 0, 1), 0xfffffffffffffff0ull, 68, ALL1);
	BIN_K(ALU32_K(BPF_ARSH, 0, 31), 0x80000000ull, 0xffffffffull);
	BIN_K(ALU32_K(BPF_ARSH, 0, 4), 0xffffffff00000010ull, 1);
	BIN_X(ALU32_X(BPF_ARSH, 0, 1), 0x80000000ull, 32, 0x80000000ull);
	BIN_X(ALU32_X(BPF_ARSH, 0, 1), 0x80000000ull, 36, 0xf8000000ull);
}

static void test_neg_mov_movsx(void)
{
	BIN_K(NEG64(0), 5, (uint64_t)-5);
	BIN_K(NEG64(0), I64MIN, I64MIN);
	BIN_K(NEG64(0), 0, 0);
	BIN_K(NEG32(0), 0x100000005ull, 0xfffffffbull);
	BIN_K(NEG32(0), 0x80000000ull, 0x80000000ull);
	BIN_K(NEG32(0), 0xffffffff00000000ull, 0);
	BIN_K(MOV64_K(0, -1), 0, ALL1);
	BIN_K(MOV32_K(0, -1), 0x1234ull << 40, 0xffffffffull);
	BIN_K(MOV64_K(0, 0x7fffffff), ALL1, 0x7fffffffull);
	BIN_X(MOV64_X(0, 1), 0, 0x123456789ull, 0x123456789ull);
	BIN_X(MOV32_X(0, 1), 0, ALL1, 0xffffffffull);
	BIN_X(MOVSX64(0, 1, 8), 0, 0x80, 0xffffffffffffff80ull);
	BIN_X(MOVSX64(0, 1, 8), 0, 0x7f, 0x7f);
	BIN_X(MOVSX64(0, 1, 8), 0, 0x12340000000000ffull, ALL1);
	BIN_X(MOVSX64(0, 1, 16), 0, 0x8000, 0xffffffffffff8000ull);
	BIN_X(MOVSX64(0, 1, 16), 0, 0xffff7fffull, 0x7fff);
	BIN_X(MOVSX64(0, 1, 32), 0, 0x80000000ull, 0xffffffff80000000ull);
	BIN_X(MOVSX64(0, 1, 32), 0, 0x17fffffffull, 0x7fffffffull);
	BIN_X(MOVSX32(0, 1, 8), ALL1, 0x80, 0xffffff80ull); /* upper half zero */
	BIN_X(MOVSX32(0, 1, 8), ALL1, 0x17f, 0x7f);
	BIN_X(MOVSX32(0, 1, 16), 0, 0xffff000000008001ull, 0xffff8001ull);
	BIN_X(MOVSX32(0, 1, 16), 0, 0x7001, 0x7001);
	/* movsx onto itself */
	BIN_K(MOVSX64(0, 0, 8), 0xfe, (uint64_t)-2);
}

static void test_byteswap(void)
{
	const uint64_t v = 0x1122334455667788ull;
	BIN_K(LE(0, 16), v, 0x7788);
	BIN_K(LE(0, 32), v, 0x55667788);
	BIN_K(LE(0, 64), v, v);
	BIN_K(BE(0, 16), v, 0x8877);
	BIN_K(BE(0, 32), v, 0x88776655);
	BIN_K(BE(0, 64), v, 0x8877665544332211ull);
	BIN_K(BSWAP(0, 16), v, 0x8877);
	BIN_K(BSWAP(0, 32), v, 0x88776655);
	BIN_K(BSWAP(0, 64), v, 0x8877665544332211ull);
	BIN_K(BSWAP(0, 16), 0xff00, 0xff);
}

static void test_lddw_and_regs(void)
{
	EXPECT(0x123456789abcdef0ull, LDDW(0, 0x123456789abcdef0ull), EXIT());
	EXPECT(0xffffffff00000000ull, LDDW(0, 0xffffffff00000000ull), EXIT());
	EXPECT(0x80000000ull, LDDW(0, 0x80000000ull), EXIT()); /* no sign extension */
	/* r1, r2 carry the arguments; other registers start at 0 */
	struct vm_program p = { PROG(MOV64_X(0, 1), ALU64_X(BPF_LSH, 0, 2), ALU64_X(BPF_ADD, 0, 3),
				     ALU64_X(BPF_ADD, 0, 9), EXIT()),
				5, NULL, NULL };
	uint64_t r0 = 0;
	CHECK(vm_interp_run(&p, 3, 4, &r0, NULL, NULL) == 0);
	CHECK_EQ_U64(r0, 48);
	/* r10 is the top of an 8-byte aligned 512-byte stack */
	struct run_result r = RUN(MOV64_X(0, 10), ALU64_K(BPF_AND, 0, 7), EXIT());
	CHECK(r.rc == 0 && r.r0 == 0);
}

int main(void)
{
	test_add_sub_mul();
	test_div_mod();
	test_bitwise_shift();
	test_neg_mov_movsx();
	test_byteswap();
	test_lddw_and_regs();
	TEST_DONE();
}

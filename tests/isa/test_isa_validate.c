/* isa_validate: every valid RFC 9669 form is accepted, every structural rule rejects with
 * an "insn N: ..." message naming the problem. Also isa_parse_hex_bytes. */
#include <errno.h>
#include <stdlib.h>

#include "isa/insn_build.h"
#include "test_util.h"

static char err[256];

#define ACCEPT(...)                                                                         \
	do {                                                                                \
		int r_ = isa_validate(PROG(__VA_ARGS__), PROG_LEN(__VA_ARGS__), err,        \
				      sizeof(err));                                         \
		CHECK(r_ == 0);                                                             \
		if (r_)                                                                     \
			fprintf(stderr, "  line %d rejected: %s\n", __LINE__, err);         \
	} while (0)

#define REJECT(msg, ...)                                                                    \
	do {                                                                                \
		int r_ = isa_validate(PROG(__VA_ARGS__), PROG_LEN(__VA_ARGS__), err,        \
				      sizeof(err));                                         \
		CHECK(r_ == -EINVAL);                                                       \
		CHECK_STR_CONTAINS(err, msg);                                               \
	} while (0)

static void test_accepts_all_classes(void)
{
	static const uint8_t ops[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR, BPF_AND,
				       BPF_LSH, BPF_RSH, BPF_MOD, BPF_XOR, BPF_MOV, BPF_ARSH };
	for (size_t i = 0; i < sizeof(ops); i++) {
		ACCEPT(ALU64_K(ops[i], 1, 7), ALU64_X(ops[i], 1, 2), ALU32_K(ops[i], 1, -7),
		       ALU32_X(ops[i], 1, 10), EXIT());
	}
	ACCEPT(SALU64_K(BPF_DIV, 1, 3), SALU64_X(BPF_DIV, 1, 2), SALU32_K(BPF_MOD, 1, 3),
	       SALU32_X(BPF_MOD, 1, 2), SALU64_X(BPF_MOD, 0, 9), EXIT());
	ACCEPT(MOVSX64(1, 2, 8), MOVSX64(1, 2, 16), MOVSX64(1, 2, 32), MOVSX32(1, 2, 8),
	       MOVSX32(1, 2, 16), NEG64(3), NEG32(4), EXIT());
	for (int w = 16; w <= 64; w *= 2)
		ACCEPT(LE(1, w), BE(2, w), BSWAP(3, w), EXIT());
	static const uint8_t sz[] = { BPF_B, BPF_H, BPF_W, BPF_DW };
	for (size_t i = 0; i < 4; i++) {
		ACCEPT(LDX(sz[i], 0, 10, -8), STX(sz[i], 10, 1, -16), ST(sz[i], 10, -8, 5),
		       ST(sz[i], 1, 0x7fff, -1), EXIT());
		if (sz[i] != BPF_DW)
			ACCEPT(LDXSX(sz[i], 0, 1, 2), EXIT());
	}
	static const int32_t aops[] = { BPF_ADD, BPF_OR, BPF_AND, BPF_XOR };
	for (size_t i = 0; i < 4; i++)
		ACCEPT(ATOMIC(BPF_W, 10, 1, -8, aops[i]), ATOMIC(BPF_DW, 10, 1, -8, aops[i]),
		       ATOMIC(BPF_W, 1, 2, 0, aops[i] | BPF_FETCH),
		       ATOMIC(BPF_DW, 1, 2, 0, aops[i] | BPF_FETCH), EXIT());
	ACCEPT(ATOMIC(BPF_W, 1, 2, 0, BPF_XCHG), ATOMIC(BPF_DW, 1, 2, 0, BPF_XCHG),
	       ATOMIC(BPF_W, 1, 2, 0, BPF_CMPXCHG), ATOMIC(BPF_DW, 1, 2, 0, BPF_CMPXCHG), EXIT());
	ACCEPT(LDDW(1, 0x123456789abcdefull), INSN(BPF_LDDW, 2, BPF_PSEUDO_MAP_FD, 0, 3),
	       INSN(0, 0, 0, 0, 0), INSN(BPF_LDDW, 3, BPF_PSEUDO_MAP_VALUE, 0, 1),
	       INSN(0, 0, 0, 0, 16), EXIT());
	static const uint8_t jops[] = { BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET, BPF_JNE, BPF_JSGT,
					BPF_JSGE, BPF_JLT, BPF_JLE, BPF_JSLT, BPF_JSLE };
	for (size_t i = 0; i < sizeof(jops); i++)
		ACCEPT(JMP_K(jops[i], 1, 5, 3), JMP_X(jops[i], 1, 2, 2), JMP32_K(jops[i], 1, -5, 1),
		       JMP32_X(jops[i], 1, 2, 0), EXIT());
	ACCEPT(JA(1), JA32(0), EXIT());
	ACCEPT(JA(-1)); /* a loop: still structurally fine */
	ACCEPT(CALL(1), CALL_LOCAL(1), EXIT(), MOV64_K(0, 0), EXIT());
	ACCEPT(MOV64_K(0, 0), JA32(-2)); /* ends with gotol */
}

static void test_rejections(void)
{
	CHECK(isa_validate(NULL, 0, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "program is empty");
	REJECT("insn 0: unknown opcode 0xff", INSN(0xff, 0, 0, 0, 0), EXIT());
	REJECT("insn 1: unknown opcode 0x8f", MOV64_K(0, 0), INSN(0x8f, 0, 0, 0, 0), EXIT());
	REJECT("unknown opcode 0xdf", INSN(0xdf, 1, 0, 0, 16), EXIT()); /* ALU64|END|X */
	REJECT("unknown opcode 0x99", LDXSX(BPF_DW, 1, 2, 0), EXIT());
	REJECT("unknown opcode 0x8d", INSN(0x8d, 0, 0, 0, 2), EXIT()); /* callx */
	REJECT("unknown opcode 0x86", INSN(0x86, 0, 0, 0, 2), EXIT()); /* JMP32 call */
	REJECT("unknown opcode 0x96", INSN(0x96, 0, 0, 0, 0), EXIT());
	REJECT("unknown opcode 0x0d", INSN(0x0d, 0, 0, 0, 0), EXIT()); /* JA|X */
	REJECT("unknown opcode 0xe7", INSN(0xe7, 0, 0, 0, 0), EXIT());
	REJECT("unknown opcode 0xa2", INSN(0xa2, 1, 0, 0, 0), EXIT()); /* ST mode 0xa0 */
	REJECT("atomics exist only for W and DW", ATOMIC(BPF_B, 1, 2, 0, BPF_ADD), EXIT());
	REJECT("atomics exist only for W and DW", ATOMIC(BPF_H, 1, 2, 0, BPF_ADD), EXIT());
	REJECT("unknown atomic operation 0x10", ATOMIC(BPF_DW, 1, 2, 0, BPF_SUB), EXIT());
	REJECT("unknown atomic operation 0xe0", ATOMIC(BPF_DW, 1, 2, 0, 0xe0), EXIT());
	/* reserved fields */
	REJECT("insn 0: reserved field src_reg", INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 2, 0, 1),
	       EXIT());
	REJECT("reserved field off", INSN(BPF_ALU64 | BPF_ADD | BPF_K, 1, 0, 1, 1), EXIT());
	REJECT("reserved field imm", INSN(BPF_ALU64 | BPF_ADD | BPF_X, 1, 2, 0, 1), EXIT());
	REJECT("reserved field imm", INSN(BPF_LDX | BPF_MEM | BPF_W, 1, 2, 0, 1), EXIT());
	REJECT("reserved field src_reg", INSN(BPF_ST | BPF_MEM | BPF_W, 1, 2, 0, 1), EXIT());
	REJECT("reserved field imm", INSN(BPF_STX | BPF_MEM | BPF_W, 1, 2, 0, 1), EXIT());
	REJECT("reserved field imm", INSN(BPF_ALU64 | BPF_NEG, 1, 0, 0, 1), EXIT());
	REJECT("reserved field off", INSN(BPF_ALU64 | BPF_MOV | BPF_K, 1, 0, 8, 1), EXIT());
	REJECT("reserved field imm", INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 1));
	REJECT("reserved field dst_reg", INSN(BPF_JMP | BPF_EXIT, 1, 0, 0, 0));
	REJECT("reserved field imm", INSN(BPF_JMP | BPF_JA, 0, 0, 0, 1), EXIT());
	REJECT("reserved field off", INSN(BPF_JMP32 | BPF_JA, 0, 0, 1, 0), EXIT());
	REJECT("reserved field src_reg", INSN(BPF_JMP | BPF_JEQ | BPF_K, 1, 2, 0, 0), EXIT());
	REJECT("reserved field imm", INSN(BPF_JMP | BPF_JEQ | BPF_X, 1, 2, 0, 3), EXIT());
	REJECT("reserved field off", INSN(BPF_JMP | BPF_CALL, 0, 0, 1, 1), EXIT());
	REJECT("reserved field dst_reg", INSN(BPF_JMP | BPF_CALL, 1, 0, 0, 1), EXIT());
	REJECT("reserved field off", INSN(BPF_ALU | BPF_END | BPF_TO_LE, 1, 0, 1, 16), EXIT());
	/* registers */
	REJECT("insn 0: invalid destination register r11", INSN(0xb7, 11, 0, 0, 0), EXIT());
	REJECT("invalid source register r15", INSN(0xbf, 1, 15, 0, 0), EXIT());
	REJECT("invalid destination register r12", LDX(BPF_W, 12, 1, 0), EXIT());
	REJECT("invalid source register r11", STX(BPF_W, 1, 11, 0), EXIT());
	REJECT("invalid source register r11", JMP_X(BPF_JEQ, 1, 11, 0), EXIT());
	REJECT("r10 (frame pointer) is read-only", MOV64_K(10, 0), EXIT());
	REJECT("r10 (frame pointer) is read-only", ALU32_X(BPF_ADD, 10, 1), EXIT());
	REJECT("r10 (frame pointer) is read-only", NEG64(10), EXIT());
	REJECT("r10 (frame pointer) is read-only", LDX(BPF_DW, 10, 1, 0), EXIT());
	REJECT("r10 (frame pointer) is read-only", LDDW(10, 1), EXIT());
	REJECT("atomic fetch into r10", ATOMIC(BPF_DW, 1, 10, 0, BPF_ADD | BPF_FETCH), EXIT());
	REJECT("atomic fetch into r10", ATOMIC(BPF_W, 1, 10, 0, BPF_XCHG), EXIT());
	ACCEPT(ATOMIC(BPF_DW, 1, 10, 0, BPF_ADD), ATOMIC(BPF_DW, 1, 10, 0, BPF_CMPXCHG), EXIT());
	/* control flow */
	REJECT("insn 0: jump target 3 is outside the program", JA(2), EXIT());
	REJECT("jump target -1 is outside", JMP_K(BPF_JEQ, 1, 0, -2), EXIT());
	REJECT("jump target 5 is outside", JA32(4), EXIT());
	REJECT("jump target 2 is the second slot of the lddw at insn 1", JA(1), LDDW(1, 5),
	       EXIT());
	REJECT("jump target 2 is the second slot", JMP32_K(BPF_JNE, 1, 0, 1), LDDW(1, 5), EXIT());
	REJECT("call target 9 is outside", CALL_LOCAL(8), EXIT());
	REJECT("call target 2 is the second slot", CALL_LOCAL(1), LDDW(1, 5), EXIT());
	REJECT("kfunc calls are not supported", INSN(0x85, 0, BPF_PSEUDO_KFUNC_CALL, 0, 1),
	       EXIT());
	REJECT("unsupported call source 3", INSN(0x85, 0, 3, 0, 1), EXIT());
	REJECT("invalid helper id -1", CALL(-1), EXIT());
	REJECT("insn 1: last instruction must be exit", EXIT(), MOV64_K(0, 0));
	REJECT("last instruction must be exit", MOV64_K(0, 0), JMP_K(BPF_JEQ, 0, 0, -2));
	/* lddw */
	REJECT("insn 1: lddw is truncated", EXIT(), INSN(BPF_LDDW, 1, 0, 0, 0));
	REJECT("lddw second slot must have code, registers and off 0", INSN(BPF_LDDW, 1, 0, 0, 0),
	       INSN(0xb7, 0, 0, 0, 0), EXIT());
	REJECT("lddw second slot", INSN(BPF_LDDW, 1, 0, 0, 0), INSN(0, 1, 0, 0, 0), EXIT());
	REJECT("lddw second slot", INSN(BPF_LDDW, 1, 0, 0, 0), INSN(0, 0, 2, 0, 0), EXIT());
	REJECT("lddw second slot", INSN(BPF_LDDW, 1, 0, 0, 0), INSN(0, 0, 0, 1, 0), EXIT());
	REJECT("unsupported lddw pseudo source 3", INSN(BPF_LDDW, 1, 3, 0, 0), INSN(0, 0, 0, 0, 0),
	       EXIT());
	REJECT("lddw map reference must have 0", INSN(BPF_LDDW, 1, 1, 0, 0), INSN(0, 0, 0, 0, 4),
	       EXIT());
	REJECT("reserved field off", INSN(BPF_LDDW, 1, 0, 1, 0), INSN(0, 0, 0, 0, 0), EXIT());
	REJECT("legacy packet access", INSN(BPF_LD | BPF_ABS | BPF_W, 0, 0, 0, 4), EXIT());
	REJECT("legacy packet access", INSN(BPF_LD | BPF_IND | BPF_B, 0, 1, 0, 4), EXIT());
	REJECT("unknown opcode 0x00", INSN(0, 0, 0, 0, 0), EXIT()); /* LD|IMM|W */
	/* widths and offsets */
	REJECT("invalid byte swap width 8", LE(1, 8), EXIT());
	REJECT("invalid byte swap width 0", BE(1, 0), EXIT());
	REJECT("invalid byte swap width 128", BSWAP(1, 128), EXIT());
	REJECT("invalid movsx offset 32", MOVSX32(1, 2, 32), EXIT());
	REJECT("invalid movsx offset 1", MOVSX64(1, 2, 1), EXIT());
	REJECT("invalid movsx offset 64", MOVSX64(1, 2, 64), EXIT());
	REJECT("invalid offset 2 for div", INSN(BPF_ALU64 | BPF_DIV | BPF_X, 1, 2, 2, 0), EXIT());
	REJECT("invalid offset -1 for mod", INSN(BPF_ALU | BPF_MOD | BPF_K, 1, 0, -1, 3), EXIT());
	/* insn number is the failing one */
	REJECT("insn 3:", MOV64_K(0, 0), LDDW(1, 2), INSN(0xff, 0, 0, 0, 0), EXIT());
	/* the verifier's stable codes name format errors too (issue 14) */
	REJECT("unknown opcode 0xff [E-BAD-INSN]", INSN(0xff, 0, 0, 0, 0), EXIT());
	REJECT("outside the program (0..1) [E-BAD-JUMP]", INSN(BPF_JMP | BPF_JA, 0, 0, 5, 0), EXIT());
	REJECT("[E-BAD-INSN]", INSN(BPF_JMP | BPF_JA, 0, 0, 0, 0), INSN(0xff, 0, 0, 0, 0), EXIT());
	/* a tiny error buffer is truncated, never overrun */
	char small[8];
	CHECK(isa_validate(PROG(INSN(0xff, 0, 0, 0, 0), EXIT()), 2, small, sizeof(small)) ==
	      -EINVAL);
	CHECK(strlen(small) == 7);
	CHECK(isa_validate(PROG(INSN(0xff, 0, 0, 0, 0), EXIT()), 2, NULL, 0) == -EINVAL);
}

static void test_hex(void)
{
	uint8_t out[16];
	CHECK(isa_parse_hex_bytes("b7  00  00  00  2a  00  00  00  \n95 0 0x00 0X0 00 00 00 00",
				  out, sizeof(out)) == 16);
	CHECK(out[0] == 0xb7 && out[4] == 0x2a && out[8] == 0x95 && out[10] == 0);
	CHECK(isa_parse_hex_bytes("", out, sizeof(out)) == 0);
	CHECK(isa_parse_hex_bytes("  \n\t ", out, sizeof(out)) == 0);
	CHECK(isa_parse_hex_bytes("F", out, sizeof(out)) == 1 && out[0] == 0xf);
	CHECK(isa_parse_hex_bytes("b7 123", out, sizeof(out)) == -EINVAL);
	CHECK(isa_parse_hex_bytes("zz", out, sizeof(out)) == -EINVAL);
	CHECK(isa_parse_hex_bytes("0x", out, sizeof(out)) == -EINVAL);
	CHECK(isa_parse_hex_bytes("1,2", out, sizeof(out)) == -EINVAL);
	CHECK(isa_parse_hex_bytes("01 02 03", out, 2) == -E2BIG);
	CHECK(isa_parse_hex_bytes(NULL, out, 2) == -EINVAL);
}

int main(void)
{
	test_accepts_all_classes();
	test_rejections();
	test_hex();
	TEST_DONE();
}

/* Instruction constructors for hand-written test programs (tests/isa, tests/vm). */
#ifndef NCCLBPF_TESTS_INSN_BUILD_H
#define NCCLBPF_TESTS_INSN_BUILD_H

#include "isa/isa.h"

#define INSN(c, d, s, o, i)                                                                 \
	((struct bpf_insn){ .code = (uint8_t)(c), .dst_reg = (d), .src_reg = (s),           \
			    .off = (int16_t)(o), .imm = (int32_t)(i) })
#define ALU64_K(op, d, i) INSN(BPF_ALU64 | (op) | BPF_K, d, 0, 0, i)
#define ALU64_X(op, d, s) INSN(BPF_ALU64 | (op) | BPF_X, d, s, 0, 0)
#define ALU32_K(op, d, i) INSN(BPF_ALU | (op) | BPF_K, d, 0, 0, i)
#define ALU32_X(op, d, s) INSN(BPF_ALU | (op) | BPF_X, d, s, 0, 0)
#define SALU64_K(op, d, i) INSN(BPF_ALU64 | (op) | BPF_K, d, 0, 1, i) /* sdiv/smod */
#define SALU64_X(op, d, s) INSN(BPF_ALU64 | (op) | BPF_X, d, s, 1, 0)
#define SALU32_K(op, d, i) INSN(BPF_ALU | (op) | BPF_K, d, 0, 1, i)
#define SALU32_X(op, d, s) INSN(BPF_ALU | (op) | BPF_X, d, s, 1, 0)
#define MOV64_K(d, i) ALU64_K(BPF_MOV, d, i)
#define MOV64_X(d, s) ALU64_X(BPF_MOV, d, s)
#define MOV32_K(d, i) ALU32_K(BPF_MOV, d, i)
#define MOV32_X(d, s) ALU32_X(BPF_MOV, d, s)
#define MOVSX64(d, s, bits) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, bits, 0)
#define MOVSX32(d, s, bits) INSN(BPF_ALU | BPF_MOV | BPF_X, d, s, bits, 0)
#define NEG64(d) INSN(BPF_ALU64 | BPF_NEG, d, 0, 0, 0)
#define NEG32(d) INSN(BPF_ALU | BPF_NEG, d, 0, 0, 0)
#define LE(d, w) INSN(BPF_ALU | BPF_END | BPF_TO_LE, d, 0, 0, w)
#define BE(d, w) INSN(BPF_ALU | BPF_END | BPF_TO_BE, d, 0, 0, w)
#define BSWAP(d, w) INSN(BPF_ALU64 | BPF_END | BPF_K, d, 0, 0, w)
#define LDDW(d, v)                                                                          \
	INSN(BPF_LDDW, d, 0, 0, (uint32_t)(uint64_t)(v)),                                   \
		INSN(0, 0, 0, 0, (uint32_t)((uint64_t)(v) >> 32))
#define LDX(sz, d, s, o) INSN(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define LDXSX(sz, d, s, o) INSN(BPF_LDX | BPF_MEMSX | (sz), d, s, o, 0)
#define STX(sz, d, s, o) INSN(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define ST(sz, d, o, i) INSN(BPF_ST | BPF_MEM | (sz), d, 0, o, i)
#define ATOMIC(sz, d, s, o, op) INSN(BPF_STX | BPF_ATOMIC | (sz), d, s, o, op)
#define JA(o) INSN(BPF_JMP | BPF_JA, 0, 0, o, 0)
#define JA32(i) INSN(BPF_JMP32 | BPF_JA, 0, 0, 0, i)
#define JMP_K(op, d, i, o) INSN(BPF_JMP | (op) | BPF_K, d, 0, o, i)
#define JMP_X(op, d, s, o) INSN(BPF_JMP | (op) | BPF_X, d, s, o, 0)
#define JMP32_K(op, d, i, o) INSN(BPF_JMP32 | (op) | BPF_K, d, 0, o, i)
#define JMP32_X(op, d, s, o) INSN(BPF_JMP32 | (op) | BPF_X, d, s, o, 0)
#define CALL(id) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, id)
#define CALL_LOCAL(rel) INSN(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, rel)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

#define PROG(...) ((const struct bpf_insn[]){ __VA_ARGS__ })
#define PROG_LEN(...) (sizeof(PROG(__VA_ARGS__)) / sizeof(struct bpf_insn))

#endif

/* Instruction constructors for hand-written verifier test programs. */
#ifndef NCCLBPF_TEST_INSN_MACROS_H
#define NCCLBPF_TEST_INSN_MACROS_H
#include "isa/isa.h"

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define MOV64_IMM(d, i) INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define MOV32_IMM(d, i) INSN(BPF_ALU | BPF_MOV | BPF_K, d, 0, 0, i)
#define MOV64_REG(d, s) INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV32_REG(d, s) INSN(BPF_ALU | BPF_MOV | BPF_X, d, s, 0, 0)
#define ALU64_IMM(op, d, i) INSN(BPF_ALU64 | (op) | BPF_K, d, 0, 0, i)
#define ALU32_IMM(op, d, i) INSN(BPF_ALU | (op) | BPF_K, d, 0, 0, i)
#define ALU64_REG(op, d, s) INSN(BPF_ALU64 | (op) | BPF_X, d, s, 0, 0)
#define ALU32_REG(op, d, s) INSN(BPF_ALU | (op) | BPF_X, d, s, 0, 0)
#define LDX(sz, d, s, o) INSN(BPF_LDX | BPF_MEM | (sz), d, s, o, 0)
#define STX(sz, d, s, o) INSN(BPF_STX | BPF_MEM | (sz), d, s, o, 0)
#define ST(sz, d, o, i) INSN(BPF_ST | BPF_MEM | (sz), d, 0, o, i)
#define JMP_IMM(op, d, i, o) INSN(BPF_JMP | (op) | BPF_K, d, 0, o, i)
#define JMP_REG(op, d, s, o) INSN(BPF_JMP | (op) | BPF_X, d, s, o, 0)
#define JMP32_IMM(op, d, i, o) INSN(BPF_JMP32 | (op) | BPF_K, d, 0, o, i)
#define JA(o) INSN(BPF_JMP | BPF_JA, 0, 0, o, 0)
#define CALL(id) INSN(BPF_JMP | BPF_CALL, 0, 0, 0, id)
#define CALL_LOCAL(rel) INSN(BPF_JMP | BPF_CALL, 0, BPF_PSEUDO_CALL, 0, rel)
#define EXIT() INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define LD_MAP(d, idx) INSN(BPF_LDDW, d, BPF_PSEUDO_MAP_FD, 0, idx), INSN(0, 0, 0, 0, 0)
#define LD_MAP_VALUE(d, idx, off) INSN(BPF_LDDW, d, BPF_PSEUDO_MAP_VALUE, 0, idx), INSN(0, 0, 0, 0, off)
#define LD_FUNC(d, rel) INSN(BPF_LDDW, d, BPF_PSEUDO_FUNC, 0, rel), INSN(0, 0, 0, 0, 0)
#define LD_IMM64(d, lo, hi) INSN(BPF_LDDW, d, 0, 0, lo), INSN(0, 0, 0, 0, hi)
#endif

/* isa: the eBPF instruction set (RFC 9669 including the v4 additions).
 *
 * Owns the instruction encoding, the opcode constants, structural validation of
 * instruction streams (isa_validate.c) and the disassembler (isa_disasm.c), which
 * prints the syntax `llvm-objdump -d` uses for BPF.
 *
 * This module depends on nothing. Every other module reads instructions through it.
 */
#ifndef NCCLBPF_ISA_H
#define NCCLBPF_ISA_H

#include <stddef.h>
#include <stdint.h>

/* One 64-bit instruction slot, little-endian, exactly as in the ELF file. */
struct bpf_insn {
	uint8_t code;
	uint8_t dst_reg : 4;
	uint8_t src_reg : 4;
	int16_t off;
	int32_t imm;
};

#define BPF_NREGS 11 /* r0..r10 */
#define BPF_REG_FP 10
#define BPF_STACK_SIZE 512    /* bytes per frame */
#define BPF_MAX_CALL_DEPTH 8  /* frames, including the entry frame */

/* instruction classes (low 3 bits) */
#define BPF_CLASS(code) ((code) & 0x07)
#define BPF_LD 0x00
#define BPF_LDX 0x01
#define BPF_ST 0x02
#define BPF_STX 0x03
#define BPF_ALU 0x04
#define BPF_JMP 0x05
#define BPF_JMP32 0x06
#define BPF_ALU64 0x07

/* load/store: size (bits 3-4) and mode (bits 5-7) */
#define BPF_SIZE(code) ((code) & 0x18)
#define BPF_W 0x00
#define BPF_H 0x08
#define BPF_B 0x10
#define BPF_DW 0x18
#define BPF_MODE(code) ((code) & 0xe0)
#define BPF_IMM 0x00
#define BPF_ABS 0x20 /* legacy packet access: not supported, rejected */
#define BPF_IND 0x40 /* legacy packet access: not supported, rejected */
#define BPF_MEM 0x60
#define BPF_MEMSX 0x80
#define BPF_ATOMIC 0xc0

/* alu/jmp: source (bit 3) and operation (bits 4-7) */
#define BPF_SRC(code) ((code) & 0x08)
#define BPF_K 0x00
#define BPF_X 0x08
#define BPF_OP(code) ((code) & 0xf0)

#define BPF_ADD 0x00
#define BPF_SUB 0x10
#define BPF_MUL 0x20
#define BPF_DIV 0x30 /* off=1: signed */
#define BPF_OR 0x40
#define BPF_AND 0x50
#define BPF_LSH 0x60
#define BPF_RSH 0x70
#define BPF_NEG 0x80
#define BPF_MOD 0x90 /* off=1: signed */
#define BPF_XOR 0xa0
#define BPF_MOV 0xb0 /* off=8/16/32: MOVSX */
#define BPF_ARSH 0xc0
#define BPF_END 0xd0 /* BPF_ALU: K=to LE, X=to BE; BPF_ALU64|K: bswap */
#define BPF_TO_LE 0x00
#define BPF_TO_BE 0x08

#define BPF_JA 0x00 /* BPF_JMP32|BPF_JA: gotol, offset in imm */
#define BPF_JEQ 0x10
#define BPF_JGT 0x20
#define BPF_JGE 0x30
#define BPF_JSET 0x40
#define BPF_JNE 0x50
#define BPF_JSGT 0x60
#define BPF_JSGE 0x70
#define BPF_CALL 0x80
#define BPF_EXIT 0x90
#define BPF_JLT 0xa0
#define BPF_JLE 0xb0
#define BPF_JSLT 0xc0
#define BPF_JSLE 0xd0

/* atomic operations (imm of BPF_STX|BPF_ATOMIC|BPF_W/DW) */
#define BPF_FETCH 0x01
#define BPF_XCHG (0xe0 | BPF_FETCH)
#define BPF_CMPXCHG (0xf0 | BPF_FETCH)

/* src_reg of LDDW (BPF_LD|BPF_IMM|BPF_DW).
 * In this runtime the "fd" of the map pseudo forms is the index of the map in the
 * object's map table (struct nb_object.maps); the loader emits these. */
#define BPF_PSEUDO_MAP_FD 1    /* imm = map index: r = map handle */
#define BPF_PSEUDO_MAP_VALUE 2 /* imm = map index, next imm = offset: r = &value[0] + off */
/* imm = callback offset like a local call (target = pc + imm + 1), next imm 0: the address
 * of a function, only usable as bpf_loop's callback. Linked (vm.h): imm64 = the absolute
 * instruction index of the function, src_reg stays BPF_PSEUDO_FUNC. */
#define BPF_PSEUDO_FUNC 4
/* src_reg of CALL */
#define BPF_PSEUDO_CALL 1 /* bpf-to-bpf call: target = pc + imm + 1 */
#define BPF_PSEUDO_KFUNC_CALL 2 /* not supported, rejected */

#define BPF_LDDW (BPF_LD | BPF_IMM | BPF_DW)

static inline int isa_is_lddw(const struct bpf_insn *insn)
{
	return insn->code == BPF_LDDW;
}

/* Bytes accessed by a load/store of the given size field. */
static inline unsigned isa_size_bytes(uint8_t code)
{
	switch (BPF_SIZE(code)) {
	case BPF_B: return 1;
	case BPF_H: return 2;
	case BPF_W: return 4;
	default: return 8;
	}
}

/* Structural validation: every opcode known with its reserved fields zero, registers in
 * range (no writes to r10 except as a store base), LDDW complete and never the target of a
 * jump into its second slot, jump and local-call targets inside the program, BPF_ABS/IND,
 * kfunc calls and unknown pseudo forms rejected, and the last slot an exit or unconditional
 * jump (so execution can never run past the end: the unchecked interpreter relies on it).
 * Runs on every program at load, before any execution. Returns 0, or -EINVAL with
 * "insn N: <what is wrong>" in err ("program is empty" for no instructions). */
int isa_validate(const struct bpf_insn *insns, size_t insn_cnt, char *err, size_t errlen);

/* Disassembles instruction `pc` into buf in llvm-objdump syntax (without the address and
 * byte columns), e.g. "r0 = *(u32 *)(r1 + 8)", "if r1 > 32 goto +3". objdump's branch
 * target annotation (" <LBB0_2>", which depends on the object's symbols) is not printed.
 * Forms LLVM 14 cannot print use LLVM 17 syntax ("r0 s/= r1", "r0 = (s8)r1",
 * "r0 = *(s16 *)(r1 + 2)", "r0 = bswap64 r0", "gotol +5", "r1 %= 4", "*(u32 *)(r1 + 0) = 4",
 * "if r1 & 4 goto +3"); pseudo LDDW prints "r1 = map[3] ll" / "r1 = map[3][0] + 8 ll"
 * (map indexes). An undecodable slot prints "<unknown>" and consumes 1 slot, as objdump
 * does; a truncated buffer is NUL-terminated. Returns the number of slots consumed (1, or
 * 2 for LDDW), or -EINVAL for a NULL argument or pc >= insn_cnt. */
int isa_disasm_insn(const struct bpf_insn *insns, size_t insn_cnt, size_t pc, char *buf,
		    size_t buflen);

/* Parses whitespace-separated hex byte tokens ("b7 00 00 ..." with optional 0x) into
 * out. Returns the number of bytes, or -EINVAL / -E2BIG. Used by `ncclbpf exec`. */
long isa_parse_hex_bytes(const char *text, uint8_t *out, size_t cap);

#endif

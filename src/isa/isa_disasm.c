/* Disassembler printing the syntax of `llvm-objdump -d` (LLVM 14, default features) for BPF.
 *
 * Choices where LLVM 14 prints nothing useful (summarised in isa.h):
 * - Branch targets are printed as "+N"/"-N" only; objdump appends " <sym>" (e.g. <LBB0_2>
 *   or <.text+0x48>) depending on the symbols of the object, which an instruction stream
 *   does not have.
 * - Instructions LLVM 14 decodes only with --mattr=+alu32 (32-bit atomics other than the
 *   plain add) use that syntax: "w2 = atomic_fetch_add((u32 *)(r1 - 8), w2)".
 * - Instructions LLVM 14 cannot decode use the LLVM 17+ syntax: "r1 %= 4", store immediate
 *   "*(u32 *)(r1 + 3) = 4", "if r1 & 4 goto +3", "r0 s/= r1", "r0 s%= r1",
 *   "r0 = (s8)r1", "r0 = *(s16 *)(r1 + 2)", "r0 = bswap64 r0", "gotol +5".
 * - LDDW pseudo forms (LLVM 14 prints a bare "ld_pseudo"): "r1 = map[3] ll" for
 *   BPF_PSEUDO_MAP_FD and "r1 = map[3][0] + 8 ll" for BPF_PSEUDO_MAP_VALUE (the numbers are
 *   map indexes in the object's map table, as the loader emits them); "r2 = func[20] ll"
 *   for a BPF_PSEUDO_FUNC callback address (the index of the function's first insn).
 * - Undecodable instructions print "<unknown>", as objdump does.
 * - Legacy packet loads (BPF_LD | BPF_ABS/BPF_IND, rejected by isa_validate) print as
 *   objdump does: "r0 = *(u16 *)skb[12]", "r0 = *(u8 *)skb[r3]".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "isa/isa.h"

__attribute__((format(printf, 3, 4))) static int isa_put(char *buf, size_t len, const char *fmt,
							  ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 ? -EINVAL : 0;
}

static const char *isa_alu_op(uint8_t op, int16_t off)
{
	switch (op) {
	case BPF_ADD: return "+=";
	case BPF_SUB: return "-=";
	case BPF_MUL: return "*=";
	case BPF_DIV: return off == 1 ? "s/=" : "/=";
	case BPF_OR: return "|=";
	case BPF_AND: return "&=";
	case BPF_LSH: return "<<=";
	case BPF_RSH: return ">>=";
	case BPF_MOD: return off == 1 ? "s%=" : "%=";
	case BPF_XOR: return "^=";
	case BPF_MOV: return "=";
	case BPF_ARSH: return "s>>=";
	default: return NULL;
	}
}

static const char *isa_jmp_op(uint8_t op)
{
	switch (op) {
	case BPF_JEQ: return "==";
	case BPF_JGT: return ">";
	case BPF_JGE: return ">=";
	case BPF_JSET: return "&";
	case BPF_JNE: return "!=";
	case BPF_JSGT: return "s>";
	case BPF_JSGE: return "s>=";
	case BPF_JLT: return "<";
	case BPF_JLE: return "<=";
	case BPF_JSLT: return "s<";
	case BPF_JSLE: return "s<=";
	default: return NULL;
	}
}

static const char *isa_size_name(uint8_t code, bool sx)
{
	switch (BPF_SIZE(code)) {
	case BPF_B: return sx ? "s8" : "u8";
	case BPF_H: return sx ? "s16" : "u16";
	case BPF_W: return sx ? "s32" : "u32";
	default: return sx ? "s64" : "u64";
	}
}

/* "(r1 + 3)" / "(r1 - 3)": objdump prints the offset's sign as the operator. */
static void isa_mem_operand(char *out, size_t len, unsigned reg, int16_t off)
{
	snprintf(out, len, "r%u %c %d", reg, off < 0 ? '-' : '+', off < 0 ? -(int)off : off);
}

static int isa_disasm_alu(const struct bpf_insn *in, char *buf, size_t len)
{
	bool is64 = BPF_CLASS(in->code) == BPF_ALU64;
	char rc = is64 ? 'r' : 'w';
	uint8_t op = BPF_OP(in->code);
	unsigned d = in->dst_reg, s = in->src_reg;
	if (op == BPF_NEG)
		return isa_put(buf, len, "%c%u = -%c%u", rc, d, rc, d);
	if (op == BPF_END) {
		const char *kind = is64 ? "bswap" : BPF_SRC(in->code) == BPF_X ? "be" : "le";
		if ((is64 && BPF_SRC(in->code) == BPF_X) ||
		    (in->imm != 16 && in->imm != 32 && in->imm != 64))
			return isa_put(buf, len, "<unknown>");
		return isa_put(buf, len, "r%u = %s%d r%u", d, kind, in->imm, d);
	}
	const char *ops = isa_alu_op(op, in->off);
	if (!ops)
		return isa_put(buf, len, "<unknown>");
	if (BPF_SRC(in->code) == BPF_K)
		return isa_put(buf, len, "%c%u %s %d", rc, d, ops, in->imm);
	if (op == BPF_MOV && (in->off == 8 || in->off == 16 || in->off == 32))
		return isa_put(buf, len, "%c%u = (s%d)%c%u", rc, d, in->off, rc, s);
	return isa_put(buf, len, "%c%u %s %c%u", rc, d, ops, rc, s);
}

static int isa_disasm_atomic(const struct bpf_insn *in, char *buf, size_t len)
{
	bool dw = BPF_SIZE(in->code) == BPF_DW;
	char rc = dw ? 'r' : 'w';
	const char *sz = dw ? "u64" : "u32";
	char mem[32];
	unsigned s = in->src_reg;
	isa_mem_operand(mem, sizeof(mem), in->dst_reg, in->off);
	if (BPF_SIZE(in->code) != BPF_W && !dw)
		return isa_put(buf, len, "<unknown>");
	switch (in->imm) {
	case BPF_ADD:
		/* LLVM 14's default decoder prints the 32-bit add with an r register. */
		return isa_put(buf, len, "lock *(%s *)(%s) += r%u", sz, mem, s);
	case BPF_OR:
		return isa_put(buf, len, "lock *(%s *)(%s) |= %c%u", sz, mem, rc, s);
	case BPF_AND:
		return isa_put(buf, len, "lock *(%s *)(%s) &= %c%u", sz, mem, rc, s);
	case BPF_XOR:
		return isa_put(buf, len, "lock *(%s *)(%s) ^= %c%u", sz, mem, rc, s);
	case BPF_ADD | BPF_FETCH:
	case BPF_OR | BPF_FETCH:
	case BPF_AND | BPF_FETCH:
	case BPF_XOR | BPF_FETCH: {
		const char *name = in->imm == (BPF_ADD | BPF_FETCH)  ? "add"
				   : in->imm == (BPF_OR | BPF_FETCH) ? "or"
				   : in->imm == (BPF_AND | BPF_FETCH) ? "and"
								       : "xor";
		return isa_put(buf, len, "%c%u = atomic_fetch_%s((%s *)(%s), %c%u)", rc, s, name, sz,
			       mem, rc, s);
	}
	case BPF_XCHG:
		return isa_put(buf, len, "%c%u = xchg%s(%s, %c%u)", rc, s, dw ? "_64" : "32_32", mem,
			       rc, s);
	case BPF_CMPXCHG:
		return isa_put(buf, len, "%c0 = cmpxchg%s(%s, %c0, %c%u)", rc, dw ? "_64" : "32_32",
			       mem, rc, rc, s);
	default:
		return isa_put(buf, len, "<unknown>");
	}
}

static int isa_disasm_mem(const struct bpf_insn *in, char *buf, size_t len)
{
	char mem[32];
	uint8_t mode = BPF_MODE(in->code);
	switch (BPF_CLASS(in->code)) {
	case BPF_LDX:
		if (mode != BPF_MEM && !(mode == BPF_MEMSX && BPF_SIZE(in->code) != BPF_DW))
			break;
		isa_mem_operand(mem, sizeof(mem), in->src_reg, in->off);
		return isa_put(buf, len, "r%u = *(%s *)(%s)", in->dst_reg,
			       isa_size_name(in->code, mode == BPF_MEMSX), mem);
	case BPF_ST:
		if (mode != BPF_MEM)
			break;
		isa_mem_operand(mem, sizeof(mem), in->dst_reg, in->off);
		return isa_put(buf, len, "*(%s *)(%s) = %d", isa_size_name(in->code, false), mem,
			       in->imm);
	case BPF_STX:
		if (mode == BPF_ATOMIC)
			return isa_disasm_atomic(in, buf, len);
		if (mode != BPF_MEM)
			break;
		isa_mem_operand(mem, sizeof(mem), in->dst_reg, in->off);
		return isa_put(buf, len, "*(%s *)(%s) = r%u", isa_size_name(in->code, false), mem,
			       in->src_reg);
	}
	return isa_put(buf, len, "<unknown>");
}

static int isa_disasm_jmp(const struct bpf_insn *in, char *buf, size_t len)
{
	bool is32 = BPF_CLASS(in->code) == BPF_JMP32;
	char rc = is32 ? 'w' : 'r';
	uint8_t op = BPF_OP(in->code);
	if (op == BPF_JA && BPF_SRC(in->code) == BPF_K)
		return is32 ? isa_put(buf, len, "gotol %+d", in->imm)
			    : isa_put(buf, len, "goto %+d", in->off);
	if (!is32 && in->code == (BPF_JMP | BPF_CALL))
		return isa_put(buf, len, "call %d", in->imm);
	if (!is32 && in->code == (BPF_JMP | BPF_CALL | BPF_X))
		return isa_put(buf, len, "callx r%d", in->imm);
	if (!is32 && in->code == (BPF_JMP | BPF_EXIT))
		return isa_put(buf, len, "exit");
	const char *ops = isa_jmp_op(op);
	if (!ops)
		return isa_put(buf, len, "<unknown>");
	if (BPF_SRC(in->code) == BPF_K)
		return isa_put(buf, len, "if %c%u %s %d goto %+d", rc, in->dst_reg, ops, in->imm,
			       in->off);
	return isa_put(buf, len, "if %c%u %s %c%u goto %+d", rc, in->dst_reg, ops, rc,
		       in->src_reg, in->off);
}

int isa_disasm_insn(const struct bpf_insn *insns, size_t insn_cnt, size_t pc, char *buf,
		    size_t buflen)
{
	if (!insns || !buf || buflen == 0 || pc >= insn_cnt)
		return -EINVAL;
	const struct bpf_insn *in = &insns[pc];
	int r;
	switch (BPF_CLASS(in->code)) {
	case BPF_LD:
		/* legacy packet loads (rejected by the validator, but old objects have them):
		 * objdump's "r0 = *(u16 *)skb[12]" / "r0 = *(u8 *)skb[r3]" (imm not shown) */
		if ((BPF_MODE(in->code) == BPF_ABS || BPF_MODE(in->code) == BPF_IND) &&
		    BPF_SIZE(in->code) != BPF_DW) {
			if (BPF_MODE(in->code) == BPF_ABS)
				r = isa_put(buf, buflen, "r0 = *(%s *)skb[%d]",
					    isa_size_name(in->code, false), in->imm);
			else
				r = isa_put(buf, buflen, "r0 = *(%s *)skb[r%u]",
					    isa_size_name(in->code, false), in->src_reg);
			break;
		}
		if (in->code != BPF_LDDW || pc + 1 >= insn_cnt) {
			r = isa_put(buf, buflen, "<unknown>");
			break;
		}
		uint64_t v = (uint64_t)(uint32_t)in->imm | (uint64_t)(uint32_t)in[1].imm << 32;
		if (in->src_reg == BPF_PSEUDO_MAP_FD)
			r = isa_put(buf, buflen, "r%u = map[%d] ll", in->dst_reg, in->imm);
		else if (in->src_reg == BPF_PSEUDO_MAP_VALUE)
			r = isa_put(buf, buflen, "r%u = map[%d][0] + %u ll", in->dst_reg, in->imm,
				    (uint32_t)in[1].imm);
		else if (in->src_reg == BPF_PSEUDO_FUNC) /* the function's first insn */
			r = isa_put(buf, buflen, "r%u = func[%lld] ll", in->dst_reg,
				    (long long)pc + in->imm + 1);
		else
			r = isa_put(buf, buflen, "r%u = %" PRId64 " ll", in->dst_reg, (int64_t)v);
		return r ? r : 2;
	case BPF_LDX: case BPF_ST: case BPF_STX:
		r = isa_disasm_mem(in, buf, buflen);
		break;
	case BPF_ALU: case BPF_ALU64:
		r = isa_disasm_alu(in, buf, buflen);
		break;
	default:
		r = isa_disasm_jmp(in, buf, buflen);
		break;
	}
	return r ? r : 1;
}

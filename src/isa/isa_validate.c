/* Structural validation of instruction streams (RFC 9669 incl. v4).
 *
 * Checks each instruction in isolation (known opcode, reserved fields zero, registers in
 * range, r10 never a destination) and then the control flow targets (inside the program,
 * never into the second slot of an LDDW). It proves nothing about values: that is the
 * verifier's job. The interpreter's unchecked mode relies on these guarantees (jump
 * targets in range, last instruction an exit or unconditional jump), so it needs no
 * per-instruction bounds check.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "isa/isa.h"

struct isa_check {
	char *err;
	size_t errlen;
	size_t pc;
	bool jump; /* the error is about a jump target: [E-BAD-JUMP], else [E-BAD-INSN] */
};

__attribute__((format(printf, 2, 3))) static int isa_fail(struct isa_check *c, const char *fmt,
							   ...)
{
	if (c->err && c->errlen) {
		int n = snprintf(c->err, c->errlen, "insn %zu: ", c->pc);
		if (n >= 0 && (size_t)n < c->errlen) {
			va_list ap;
			va_start(ap, fmt);
			vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
			va_end(ap);
			/* the verifier's stable codes, for instruction-format errors too */
			size_t len = strlen(c->err);
			snprintf(c->err + len, c->errlen - len, " [%s]",
				 c->jump ? "E-BAD-JUMP" : "E-BAD-INSN");
		}
	}
	return -EINVAL;
}

static int isa_check_regs(struct isa_check *c, const struct bpf_insn *in, bool dst_written)
{
	if (in->dst_reg >= BPF_NREGS)
		return isa_fail(c, "invalid destination register r%u", in->dst_reg);
	if (in->src_reg >= BPF_NREGS)
		return isa_fail(c, "invalid source register r%u", in->src_reg);
	if (dst_written && in->dst_reg == BPF_REG_FP)
		return isa_fail(c, "r10 (frame pointer) is read-only");
	return 0;
}

static int isa_zero(struct isa_check *c, const struct bpf_insn *in, bool src, bool off, bool imm)
{
	if (src && in->src_reg)
		return isa_fail(c, "reserved field src_reg must be 0 (is %u) for opcode 0x%02x",
				in->src_reg, in->code);
	if (off && in->off)
		return isa_fail(c, "reserved field off must be 0 (is %d) for opcode 0x%02x", in->off,
				in->code);
	if (imm && in->imm)
		return isa_fail(c, "reserved field imm must be 0 (is %d) for opcode 0x%02x", in->imm,
				in->code);
	return 0;
}

static int isa_check_alu(struct isa_check *c, const struct bpf_insn *in)
{
	bool is64 = BPF_CLASS(in->code) == BPF_ALU64;
	bool is_x = BPF_SRC(in->code) == BPF_X;
	uint8_t op = BPF_OP(in->code);
	int r = isa_check_regs(c, in, true);
	if (r)
		return r;
	switch (op) {
	case BPF_ADD: case BPF_SUB: case BPF_MUL: case BPF_OR: case BPF_AND:
	case BPF_LSH: case BPF_RSH: case BPF_XOR: case BPF_ARSH:
		return isa_zero(c, in, !is_x, true, is_x);
	case BPF_DIV: case BPF_MOD:
		if (in->off != 0 && in->off != 1)
			return isa_fail(c, "invalid offset %d for %s (0 = unsigned, 1 = signed)",
					in->off, op == BPF_DIV ? "div" : "mod");
		return isa_zero(c, in, !is_x, false, is_x);
	case BPF_NEG:
		if (is_x)
			return isa_fail(c, "unknown opcode 0x%02x", in->code);
		return isa_zero(c, in, true, true, true);
	case BPF_MOV:
		if (!is_x)
			return isa_zero(c, in, true, true, false);
		if (!(in->off == 0 || in->off == 8 || in->off == 16 || (is64 && in->off == 32)))
			return isa_fail(c, "invalid movsx offset %d (allowed: 8, 16%s)", in->off,
					is64 ? ", 32" : "");
		return isa_zero(c, in, false, false, true);
	case BPF_END:
		if (is64 && is_x)
			return isa_fail(c, "unknown opcode 0x%02x", in->code);
		if (in->imm != 16 && in->imm != 32 && in->imm != 64)
			return isa_fail(c, "invalid byte swap width %d (allowed: 16, 32, 64)",
					in->imm);
		return isa_zero(c, in, true, true, false);
	default:
		return isa_fail(c, "unknown opcode 0x%02x", in->code);
	}
}

static bool isa_atomic_imm_ok(int32_t imm)
{
	switch (imm) {
	case BPF_ADD: case BPF_ADD | BPF_FETCH:
	case BPF_OR: case BPF_OR | BPF_FETCH:
	case BPF_AND: case BPF_AND | BPF_FETCH:
	case BPF_XOR: case BPF_XOR | BPF_FETCH:
	case BPF_XCHG: case BPF_CMPXCHG:
		return true;
	default:
		return false;
	}
}

static int isa_check_mem(struct isa_check *c, const struct bpf_insn *in)
{
	uint8_t mode = BPF_MODE(in->code), size = BPF_SIZE(in->code);
	int r;
	switch (BPF_CLASS(in->code)) {
	case BPF_LDX:
		if (mode != BPF_MEM && !(mode == BPF_MEMSX && size != BPF_DW))
			return isa_fail(c, "unknown opcode 0x%02x", in->code);
		if ((r = isa_check_regs(c, in, true)))
			return r;
		return isa_zero(c, in, false, false, true);
	case BPF_ST:
		if (mode != BPF_MEM)
			return isa_fail(c, "unknown opcode 0x%02x", in->code);
		if ((r = isa_check_regs(c, in, false)))
			return r;
		return isa_zero(c, in, true, false, false);
	case BPF_STX:
		if ((r = isa_check_regs(c, in, false)))
			return r;
		if (mode == BPF_MEM)
			return isa_zero(c, in, false, false, true);
		if (mode != BPF_ATOMIC || (size != BPF_W && size != BPF_DW))
			return isa_fail(c, "unknown opcode 0x%02x%s", in->code,
					mode == BPF_ATOMIC ? " (atomics exist only for W and DW)"
							   : "");
		if (!isa_atomic_imm_ok(in->imm))
			return isa_fail(c, "unknown atomic operation 0x%x", (unsigned)in->imm);
		/* fetch forms and xchg write the old value into src_reg */
		if ((in->imm & BPF_FETCH) && in->imm != BPF_CMPXCHG && in->src_reg == BPF_REG_FP)
			return isa_fail(c, "r10 (frame pointer) is read-only (atomic fetch into r10)");
		return 0;
	default:
		return isa_fail(c, "unknown opcode 0x%02x", in->code);
	}
}

/* Returns 1 for an LDDW that consumed the next slot, 0 for other LD, <0 on error. */
static int isa_check_ld(struct isa_check *c, const struct bpf_insn *insns, size_t cnt,
			const uint8_t *second)
{
	const struct bpf_insn *in = &insns[c->pc];
	int r;
	if (BPF_MODE(in->code) == BPF_ABS || BPF_MODE(in->code) == BPF_IND)
		return isa_fail(c, "legacy packet access (BPF_ABS/BPF_IND, opcode 0x%02x) is not "
				   "supported", in->code);
	if (in->code != BPF_LDDW)
		return isa_fail(c, "unknown opcode 0x%02x", in->code);
	if ((r = isa_check_regs(c, in, true)))
		return r;
	if (in->src_reg != 0 && in->src_reg != BPF_PSEUDO_MAP_FD &&
	    in->src_reg != BPF_PSEUDO_MAP_VALUE && in->src_reg != BPF_PSEUDO_FUNC)
		return isa_fail(c, "unsupported lddw pseudo source %u", in->src_reg);
	if ((r = isa_zero(c, in, false, true, false)))
		return r;
	if (c->pc + 1 >= cnt)
		return isa_fail(c, "lddw is truncated (its second slot is missing)");
	const struct bpf_insn *hi = &insns[c->pc + 1];
	if (hi->code || hi->dst_reg || hi->src_reg || hi->off)
		return isa_fail(c, "lddw second slot must have code, registers and off 0");
	if (in->src_reg == BPF_PSEUDO_MAP_FD && hi->imm)
		return isa_fail(c, "lddw map reference must have 0 in the second imm");
	if (in->src_reg == BPF_PSEUDO_FUNC) {
		if (hi->imm)
			return isa_fail(c, "lddw function address must have 0 in the second imm");
		int64_t t = (int64_t)c->pc + 1 + in->imm;
		if (t < 0 || t >= (int64_t)cnt)
			return isa_fail(c, "function address target %lld is outside the program "
					   "(0..%zu)", (long long)t, cnt - 1);
		if (second[t])
			return isa_fail(c, "function address target %lld is the second slot of an "
					   "lddw", (long long)t);
	}
	return 1;
}

static int isa_check_target(struct isa_check *c, const uint8_t *second, size_t cnt, int64_t rel,
			    const char *what)
{
	int64_t t = (int64_t)c->pc + 1 + rel;
	c->jump = true; /* reset by the next instruction's check (isa_validate) */
	if (t < 0 || t >= (int64_t)cnt)
		return isa_fail(c, "%s target %lld is outside the program (0..%zu)", what,
				(long long)t, cnt - 1);
	if (second[t])
		return isa_fail(c, "%s target %lld is the second slot of the lddw at insn %lld",
				what, (long long)t, (long long)t - 1);
	c->jump = false;
	return 0;
}

static int isa_check_jmp(struct isa_check *c, const struct bpf_insn *in, const uint8_t *second,
			 size_t cnt)
{
	bool is32 = BPF_CLASS(in->code) == BPF_JMP32;
	uint8_t op = BPF_OP(in->code);
	int r;
	if ((r = isa_check_regs(c, in, false)))
		return r;
	switch (op) {
	case BPF_JA:
		if (BPF_SRC(in->code) == BPF_X)
			return isa_fail(c, "unknown opcode 0x%02x", in->code);
		if (!is32) {
			if ((r = isa_zero(c, in, true, false, true)) || in->dst_reg)
				return r ? r : isa_fail(c, "reserved field dst_reg must be 0");
			return isa_check_target(c, second, cnt, in->off, "jump");
		}
		if ((r = isa_zero(c, in, true, true, false)) || in->dst_reg)
			return r ? r : isa_fail(c, "reserved field dst_reg must be 0");
		return isa_check_target(c, second, cnt, in->imm, "jump");
	case BPF_CALL:
		if (is32 || BPF_SRC(in->code) == BPF_X)
			return isa_fail(c, "unknown opcode 0x%02x%s", in->code,
					BPF_SRC(in->code) == BPF_X ? " (callx is not supported)" : "");
		if (in->dst_reg)
			return isa_fail(c, "reserved field dst_reg must be 0 for call");
		if ((r = isa_zero(c, in, false, true, false)))
			return r;
		if (in->src_reg == BPF_PSEUDO_CALL)
			return isa_check_target(c, second, cnt, in->imm, "call");
		if (in->src_reg == BPF_PSEUDO_KFUNC_CALL)
			return isa_fail(c, "kfunc calls are not supported");
		if (in->src_reg != 0)
			return isa_fail(c, "unsupported call source %u", in->src_reg);
		if (in->imm < 0)
			return isa_fail(c, "invalid helper id %d", in->imm);
		return 0;
	case BPF_EXIT:
		if (is32 || BPF_SRC(in->code) == BPF_X)
			return isa_fail(c, "unknown opcode 0x%02x", in->code);
		if (in->dst_reg)
			return isa_fail(c, "reserved field dst_reg must be 0 for exit");
		return isa_zero(c, in, true, true, true);
	case BPF_JEQ: case BPF_JGT: case BPF_JGE: case BPF_JSET: case BPF_JNE:
	case BPF_JSGT: case BPF_JSGE: case BPF_JLT: case BPF_JLE: case BPF_JSLT: case BPF_JSLE:
		if ((r = isa_zero(c, in, BPF_SRC(in->code) == BPF_K, false,
				  BPF_SRC(in->code) == BPF_X)))
			return r;
		return isa_check_target(c, second, cnt, in->off, "jump");
	default:
		return isa_fail(c, "unknown opcode 0x%02x", in->code);
	}
}

int isa_validate(const struct bpf_insn *insns, size_t insn_cnt, char *err, size_t errlen)
{
	struct isa_check c = { err, errlen, 0, false };
	int r = 0;
	if (err && errlen)
		err[0] = '\0';
	if (!insns || insn_cnt == 0) {
		if (err && errlen)
			snprintf(err, errlen, "program is empty");
		return -EINVAL;
	}
	if (insn_cnt > (size_t)INT32_MAX) {
		if (err && errlen)
			snprintf(err, errlen, "program has too many instructions (%zu)", insn_cnt);
		return -EINVAL;
	}
	/* second[i] = 1 when slot i is the second half of an LDDW: not an instruction. */
	uint8_t *second = calloc(insn_cnt, 1);
	if (!second)
		return -ENOMEM;
	for (size_t pc = 0; pc < insn_cnt; pc++) {
		if (insns[pc].code == BPF_LDDW && pc + 1 < insn_cnt)
			second[++pc] = 1;
	}
	for (c.pc = 0; c.pc < insn_cnt && !r; c.pc++) {
		const struct bpf_insn *in = &insns[c.pc];
		switch (BPF_CLASS(in->code)) {
		case BPF_ALU: case BPF_ALU64:
			r = isa_check_alu(&c, in);
			break;
		case BPF_LDX: case BPF_ST: case BPF_STX:
			r = isa_check_mem(&c, in);
			break;
		case BPF_LD:
			r = isa_check_ld(&c, insns, insn_cnt, second);
			if (r == 1) {
				c.pc++;
				r = 0;
			}
			break;
		case BPF_JMP: case BPF_JMP32:
			r = isa_check_jmp(&c, in, second, insn_cnt);
			break;
		}
	}
	if (!r) {
		/* Execution must never run past the end: the last slot is an exit or an
		 * unconditional jump (the verifier demands the same). */
		const struct bpf_insn *last = &insns[insn_cnt - 1];
		bool ends = !second[insn_cnt - 1] &&
			    (last->code == (BPF_JMP | BPF_EXIT) || last->code == (BPF_JMP | BPF_JA) ||
			     last->code == (BPF_JMP32 | BPF_JA));
		if (!ends) {
			c.pc = insn_cnt - 1;
			r = isa_fail(&c, "last instruction must be exit or an unconditional jump "
					 "(execution would fall off the end)");
		}
	}
	free(second);
	return r;
}

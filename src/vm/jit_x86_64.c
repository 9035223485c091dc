/* x86-64 JIT, code generation: eBPF instructions to native code with exactly the
 * interpreter's semantics (vm.h).
 *
 * Register map (default, as Linux/DPDK): r0 RAX, r1-r5 RDI RSI RDX RCX R8 (the System V
 * argument registers, so helper calls need no shuffling), r6-r9 RBX R13 R14 R15
 * (callee-saved), r10 RBP. R9/R10/R11 are scratch, R12 anchors the entry frame when the
 * program has local calls. A test hook permutes r0-r9 over the ten homes; every sequence
 * below is written for any placement (moves are only omitted when they are no-ops).
 *
 * Frames. Every BPF frame has 512 bytes of stack below RBP and RSP is 16-byte aligned in
 * every function body, so helper calls are always ABI-aligned. A subprogram frame is
 * always 560 bytes (return address, RBP and the homes of r6-r9, 512 stack), so the call
 * depth is a pure function of RSP: a local call checks RSP against R12 instead of keeping
 * a counter. Main frame: pushes (RBP, used callee-saved homes, R12, fault-record slot),
 * padding to alignment, 512 bytes of stack when needed.
 *
 * Run-time faults (call depth, missing helper, falling off the end) jump to one fault
 * path: it resets RSP from R12 (or the known main frame), stores kind|pc<<8|helper<<32 in the
 * fault record whose address the entry saved, and returns 0 through the main epilogue.
 * Entry A (vm_jit_entry) points the record at the image's shared raw_fault; entry B
 * (vm_jit_run) passes a per-call record in RDX. Code that cannot fault has a third entry
 * instead of the record (vm_jit_store_entry): a second copy of the main body whose frame
 * keeps RDX, the result pointer, in the same slot and whose epilogue stores r0 there and
 * returns 0.
 *
 * Two passes with identical emit calls: the first only measures (and records every
 * offset), the second writes into a RW mapping using those offsets (all jumps are rel32,
 * so sizes never depend on targets); then the mapping becomes RX.
 */
#include "vm/jit_x86_64.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"

#if defined(__x86_64__)

#define SUB_FRAME (8 + 5 * 8 + BPF_STACK_SIZE)
#define DEPTH_LIMIT_BYTES (BPF_STACK_SIZE + (BPF_MAX_CALL_DEPTH - 1) * SUB_FRAME)

struct gen {
	const struct vm_program *prog;
	const struct jit_analysis *an;
	const uint8_t *rm; /* BPF reg -> x86 reg */
	struct jit_buf b;
	size_t *off;       /* body offset of each insn */
	size_t *entry_off; /* prologue offset of each function */
	size_t epi_off[2], fault_off, entry_b, store_entry;
	/* copy 1: the store entry (vm_jit_store_entry), a second main body whose epilogue
	 * stores r0 through the third argument and returns 0 */
	int copy;
	bool store_result;
	size_t *off_store; /* body offsets of copy 1 */
	size_t main_end;   /* end of everything but copy 1 */
	size_t *stub_off;
	uint64_t *stub_info;
	size_t stub_cnt, stub_cap;
	bool oom;
	/* main frame */
	int pushed[8];
	int n_pushed;
	int pad;
	bool main_stack;
	struct vm_jit_fault_rec *raw;
};

static const uint8_t caller_saved_homes[] = { X_RAX, X_RCX, X_RDX, X_RSI, X_RDI, X_R8 };
static const uint8_t arg_regs[5] = { X_RDI, X_RSI, X_RDX, X_RCX, X_R8 };

static bool is_caller_saved(int x)
{
	for (size_t i = 0; i < sizeof(caller_saved_homes); i++)
		if (caller_saved_homes[i] == x)
			return true;
	return false;
}

static void jmp_to(struct gen *g, size_t target)
{
	size_t at = jit_jmp32(&g->b);
	jit_patch_rel32(&g->b, at, target);
}

static void jcc_to(struct gen *g, enum jit_cc cc, size_t target)
{
	size_t at = jit_jcc32(&g->b, cc);
	jit_patch_rel32(&g->b, at, target);
}

/* A cold stub that reports fault `kind` at `pc`; returns its index (its offset is known
 * from the sizing pass). */
static size_t stub(struct gen *g, enum vm_fault_kind kind, size_t pc, int32_t detail)
{
	if (g->stub_cnt == g->stub_cap) {
		size_t cap = g->stub_cap ? g->stub_cap * 2 : 16;
		size_t *o = realloc(g->stub_off, cap * sizeof(*o));
		if (o)
			g->stub_off = o;
		uint64_t *i = realloc(g->stub_info, cap * sizeof(*i));
		if (i)
			g->stub_info = i;
		if (!o || !i) {
			g->oom = true;
			return 0;
		}
		for (size_t k = g->stub_cap; k < cap; k++)
			g->stub_off[k] = 0;
		g->stub_cap = cap;
	}
	g->stub_info[g->stub_cnt] =
		(uint64_t)kind | ((uint64_t)pc << 8) | ((uint64_t)(uint32_t)detail << 32);
	return g->stub_cnt++;
}

static void jcc_stub(struct gen *g, enum jit_cc cc, enum vm_fault_kind kind, size_t pc)
{
	size_t k = stub(g, kind, pc, 0);
	if (!g->oom)
		jcc_to(g, cc, g->stub_off[k]);
}

static void jmp_stub(struct gen *g, enum vm_fault_kind kind, size_t pc, int32_t detail)
{
	size_t k = stub(g, kind, pc, detail);
	if (!g->oom)
		jmp_to(g, g->stub_off[k]);
}

/* ---- frames ---- */

static bool need_align(const struct gen *g)
{
	return g->an->has_calls || g->an->has_helper_calls;
}

static void main_prologue(struct gen *g)
{
	const struct jit_analysis *an = g->an;
	struct jit_buf *b = &g->b;

	if (an->may_fault) { /* entry A: movabs rdx, &raw_fault (always the 10-byte form) */
		jit_emit_u8(b, 0x48);
		jit_emit_u8(b, 0xba);
		jit_emit_u64(b, (uint64_t)(uintptr_t)g->raw);
	}
	if (g->copy == 0)
		g->entry_b = b->len;
	/* RDX: the fault record (entry B) or the result pointer (store entry) */
	bool slot = an->may_fault || g->store_result;
	g->n_pushed = 0;
	g->main_stack = an->main_uses_fp || an->has_calls;
	if (g->main_stack)
		g->pushed[g->n_pushed++] = X_RBP;
	static const uint8_t callee_saved[] = { X_RBX, X_R13, X_R14, X_R15 };
	for (size_t i = 0; i < sizeof(callee_saved); i++) {
		for (int r = 0; r < 10; r++) {
			if (an->used[r] && g->rm[r] == callee_saved[i]) {
				g->pushed[g->n_pushed++] = callee_saved[i];
				break;
			}
		}
	}
	if (an->has_calls)
		g->pushed[g->n_pushed++] = X_R12;
	for (int i = 0; i < g->n_pushed; i++)
		jit_push(b, g->pushed[i]);
	if (slot)
		jit_push(b, X_RDX); /* fault-record / result-pointer slot */
	int n = g->n_pushed + (slot ? 1 : 0);
	/* entry RSP is 8 mod 16: an odd number of pushes realigns it */
	g->pad = (need_align(g) && n % 2 == 0) ? 8 : 0;
	if (g->pad)
		jit_alu_ri(b, true, A_SUB, X_RSP, g->pad);
	if (an->has_calls)
		jit_mov_rr(b, true, X_R12, X_RSP);
	if (g->main_stack) {
		jit_mov_rr(b, true, X_RBP, X_RSP);
		jit_alu_ri(b, true, A_SUB, X_RSP, BPF_STACK_SIZE);
	}
	bool args_in_place = g->rm[1] == X_RDI && g->rm[2] == X_RSI;
	if (!args_in_place) {
		jit_mov_rr(b, true, X_R10, X_RDI);
		jit_mov_rr(b, true, X_R11, X_RSI);
	}
	/* registers other than r1/r2 start at zero, as in the interpreter (unless the code
	 * writes them before any read: jit_analysis.written_first) */
	for (int r = 0; r < 10; r++)
		if (r != 1 && r != 2 && an->used[r] && !an->written_first[r])
			jit_xor_zero(b, g->rm[r]);
	if (!args_in_place) {
		jit_mov_rr(b, true, g->rm[1], X_R10);
		jit_mov_rr(b, true, g->rm[2], X_R11);
	}
}

/* Pops the main frame's saved registers (RSP at the first of them) and returns. */
static void main_pops_ret(struct gen *g)
{
	for (int i = g->n_pushed - 1; i >= 0; i--)
		jit_pop(&g->b, g->pushed[i]);
	jit_ret(&g->b);
}

static void main_epilogue(struct gen *g)
{
	g->epi_off[g->copy] = g->b.len;
	if (g->rm[0] != X_RAX)
		jit_mov_rr(&g->b, true, X_RAX, g->rm[0]);
	int total = (g->main_stack ? BPF_STACK_SIZE : 0) + g->pad + (g->an->may_fault ? 8 : 0);
	if (total)
		jit_alu_ri(&g->b, true, A_ADD, X_RSP, total);
	if (g->store_result) { /* *result = r0; return 0 */
		jit_pop(&g->b, X_R11);
		jit_store_reg(&g->b, 8, X_R11, 0, X_RAX);
		jit_xor_zero(&g->b, X_RAX);
	}
	main_pops_ret(g);
}

/* R11 = fault info. Unwinds to the main frame, records, returns 0. */
static void fault_path(struct gen *g)
{
	struct jit_buf *b = &g->b;
	g->fault_off = b->len;
	if (g->an->has_calls)
		jit_mov_rr(b, true, X_RSP, X_R12);
	else if (g->main_stack)
		jit_alu_ri(b, true, A_ADD, X_RSP, BPF_STACK_SIZE);
	jit_load(b, 8, false, X_R10, X_RSP, g->pad);
	jit_store_reg(b, 8, X_R10, 0, X_R11);
	jit_lock_inc_m64(b, X_R10, 8);
	jit_xor_zero(b, X_RAX);
	jit_alu_ri(b, true, A_ADD, X_RSP, g->pad + 8);
	main_pops_ret(g);
}

static void sub_prologue(struct gen *g)
{
	struct jit_buf *b = &g->b;
	jit_push(b, X_RBP);
	for (int r = 6; r <= 9; r++)
		jit_push(b, g->rm[r]);
	jit_mov_rr(b, true, X_RBP, X_RSP);
	jit_alu_ri(b, true, A_SUB, X_RSP, BPF_STACK_SIZE);
}

static void sub_epilogue(struct gen *g)
{
	struct jit_buf *b = &g->b;
	jit_mov_rr(b, true, X_RSP, X_RBP);
	for (int r = 9; r >= 6; r--)
		jit_pop(b, g->rm[r]);
	jit_pop(b, X_RBP);
	jit_ret(b);
}

/* ---- ALU ---- */

static void emit_shift_reg(struct gen *g, bool w, enum jit_shift op, int d, int s)
{
	struct jit_buf *b = &g->b;
	if (s == X_RCX) {
		jit_shift_cl(b, w, op, d);
	} else if (d == X_RCX) {
		jit_mov_rr(b, true, X_R11, X_RCX);
		jit_mov_rr(b, true, X_RCX, s);
		jit_shift_cl(b, w, op, X_R11);
		jit_mov_rr(b, true, X_RCX, X_R11);
	} else {
		jit_mov_rr(b, true, X_R11, X_RCX);
		jit_mov_rr(b, true, X_RCX, s);
		jit_shift_cl(b, w, op, d);
		jit_mov_rr(b, true, X_RCX, X_R11);
	}
	if (!w) /* a zero count leaves flags alone; make the zero-extension explicit */
		jit_mov_rr(b, false, d, d);
}

/* dst = dst / src or dst % src (signed when is_signed) with the RFC's rules for zero and
 * INT_MIN / -1; idiv never sees a divisor that traps. RAX/RDX are saved in R9/R10 and the
 * result goes through R11, so any registers may be involved. */
static void emit_divmod(struct gen *g, bool w, bool is_mod, bool is_signed, int d, bool x,
			int s, int32_t imm)
{
	struct jit_buf *b = &g->b;
	if (!x && imm == 0) {
		if (!is_mod)
			jit_mov_imm32(b, d, 0);
		else if (!w)
			jit_mov_rr(b, false, d, d);
		return;
	}
	if (!x && is_signed && imm == -1) {
		if (is_mod)
			jit_mov_imm32(b, d, 0);
		else
			jit_neg(b, w, d);
		return;
	}
	jit_mov_rr(b, true, X_R9, X_RAX);
	jit_mov_rr(b, true, X_R10, X_RDX);
	if (x)
		jit_mov_rr(b, true, X_R11, s);
	else if (w)
		jit_mov_imm64(b, X_R11, (uint64_t)(int64_t)imm);
	else
		jit_mov_imm32(b, X_R11, (uint32_t)imm);
	jit_mov_rr(b, true, X_RAX, d);
	size_t to_zero = 0, to_m1 = 0;
	if (x) {
		jit_test_rr(b, w, X_R11, X_R11);
		to_zero = jit_jcc8(b, CC_E);
		if (is_signed) {
			jit_alu_ri(b, w, A_CMP, X_R11, -1);
			to_m1 = jit_jcc8(b, CC_E);
		}
	}
	if (is_signed) {
		jit_cqo(b, w);
		jit_div(b, w, true, X_R11);
	} else {
		jit_xor_zero(b, X_RDX);
		jit_div(b, w, false, X_R11);
	}
	if (is_mod)
		jit_mov_rr(b, w, X_RAX, X_RDX);
	if (x) {
		size_t to_done = jit_jmp8(b);
		size_t done_from_zero = 0;
		jit_patch_rel8(b, to_zero, b->len);
		if (is_mod) {
			if (!w)
				jit_mov_rr(b, false, X_RAX, X_RAX);
		} else {
			jit_xor_zero(b, X_RAX);
		}
		if (is_signed) {
			done_from_zero = jit_jmp8(b);
			jit_patch_rel8(b, to_m1, b->len);
			if (is_mod)
				jit_xor_zero(b, X_RAX);
			else
				jit_neg(b, w, X_RAX);
			jit_patch_rel8(b, done_from_zero, b->len);
		}
		jit_patch_rel8(b, to_done, b->len);
	}
	jit_mov_rr(b, true, X_R11, X_RAX);
	jit_mov_rr(b, true, X_RAX, X_R9);
	jit_mov_rr(b, true, X_RDX, X_R10);
	jit_mov_rr(b, true, d, X_R11);
}

static void emit_alu(struct gen *g, const struct bpf_insn *in)
{
	struct jit_buf *b = &g->b;
	bool w = BPF_CLASS(in->code) == BPF_ALU64;
	bool x = BPF_SRC(in->code) == BPF_X;
	int d = g->rm[in->dst_reg], s = g->rm[in->src_reg];
	int32_t imm = in->imm;

	switch (BPF_OP(in->code)) {
	case BPF_ADD: case BPF_SUB: case BPF_OR: case BPF_AND: case BPF_XOR: {
		enum jit_alu op = BPF_OP(in->code) == BPF_ADD   ? A_ADD
				  : BPF_OP(in->code) == BPF_SUB ? A_SUB
				  : BPF_OP(in->code) == BPF_OR  ? A_OR
				  : BPF_OP(in->code) == BPF_AND ? A_AND
								: A_XOR;
		if (x)
			jit_alu_rr(b, w, op, d, s);
		else
			jit_alu_ri(b, w, op, d, imm);
		break;
	}
	case BPF_MUL:
		if (x)
			jit_imul_rr(b, w, d, s);
		else
			jit_imul_rri(b, w, d, d, imm);
		break;
	case BPF_DIV:
	case BPF_MOD:
		emit_divmod(g, w, BPF_OP(in->code) == BPF_MOD, in->off == 1, d, x, s, imm);
		break;
	case BPF_LSH: case BPF_RSH: case BPF_ARSH: {
		enum jit_shift op = BPF_OP(in->code) == BPF_LSH   ? S_SHL
				    : BPF_OP(in->code) == BPF_RSH ? S_SHR
								  : S_SAR;
		if (x) {
			emit_shift_reg(g, w, op, d, s);
		} else {
			uint8_t cnt = (uint8_t)(imm & (w ? 63 : 31));
			if (cnt)
				jit_shift_ri(b, w, op, d, cnt);
			else if (!w)
				jit_mov_rr(b, false, d, d);
		}
		break;
	}
	case BPF_NEG:
		jit_neg(b, w, d);
		break;
	case BPF_MOV:
		if (!x) {
			if (imm == 0) /* flags are dead between BPF instructions */
				jit_xor_zero(b, d);
			else if (w)
				jit_mov_imm64(b, d, (uint64_t)(int64_t)imm);
			else
				jit_mov_imm32(b, d, (uint32_t)imm);
		} else if (in->off == 0) {
			if (!w || d != s)
				jit_mov_rr(b, w, d, s);
		} else {
			jit_movsx_rr(b, w, d, s, in->off);
		}
		break;
	case BPF_END: {
		bool swap = BPF_CLASS(in->code) == BPF_ALU64 || BPF_SRC(in->code) == BPF_TO_BE;
		if (imm == 16) {
			if (swap)
				jit_rol16_8(b, d);
			jit_movzx16(b, d, d);
		} else if (imm == 32) {
			if (swap)
				jit_bswap(b, false, d);
			else
				jit_mov_rr(b, false, d, d);
		} else if (swap) {
			jit_bswap(b, true, d);
		}
		break;
	}
	}
}

/* ---- jumps and calls ---- */

static enum jit_cc jump_cc(uint8_t op)
{
	switch (op) {
	case BPF_JEQ: return CC_E;
	case BPF_JGT: return CC_A;
	case BPF_JGE: return CC_AE;
	case BPF_JLT: return CC_B;
	case BPF_JLE: return CC_BE;
	case BPF_JSGT: return CC_G;
	case BPF_JSGE: return CC_GE;
	case BPF_JSLT: return CC_L;
	case BPF_JSLE: return CC_LE;
	default: return CC_NE; /* JNE, JSET */
	}
}

static void emit_cond_jump(struct gen *g, const struct bpf_insn *in, size_t pc)
{
	struct jit_buf *b = &g->b;
	bool w = BPF_CLASS(in->code) == BPF_JMP;
	bool x = BPF_SRC(in->code) == BPF_X;
	int d = g->rm[in->dst_reg], s = g->rm[in->src_reg];
	uint8_t op = BPF_OP(in->code);

	if (op == BPF_JSET) {
		if (x)
			jit_test_rr(b, w, d, s);
		else
			jit_test_ri(b, w, d, in->imm);
	} else {
		if (x)
			jit_alu_rr(b, w, A_CMP, d, s);
		else
			jit_alu_ri(b, w, A_CMP, d, in->imm);
	}
	jcc_to(g, jump_cc(op), g->off[pc + in->off + 1]);
}

/* call 1 on a constant array map: bounds check + address, no call. */
static void emit_inline_lookup(struct gen *g, struct nb_map *m)
{
	struct jit_buf *b = &g->b;
	int r0 = g->rm[0];
	uint32_t stride = map_array_stride(m);
	jit_load(b, 4, false, X_R11, g->rm[2], 0);
	jit_alu_ri(b, false, A_CMP, X_R11, (int32_t)map_max_entries(m));
	size_t to_null = jit_jcc8(b, CC_AE);
	if (stride && (stride & (stride - 1)) == 0) {
		if (stride > 1)
			jit_shift_ri(b, true, S_SHL, X_R11, (uint8_t)__builtin_ctz(stride));
	} else {
		jit_imul_rri(b, true, X_R11, X_R11, (int32_t)stride);
	}
	jit_mov_imm64(b, r0, (uint64_t)(uintptr_t)map_array_base(m));
	jit_alu_rr(b, true, A_ADD, r0, X_R11);
	size_t to_done = jit_jmp8(b);
	jit_patch_rel8(b, to_null, b->len);
	jit_mov_imm32(b, r0, 0);
	jit_patch_rel8(b, to_done, b->len);
}

/* bpf_loop(r1 = nr_loops, r2 = callback index, r3 = ctx, r4 = flags), as the interpreter
 * runs it: the callback is called like a local function (own frame, depth checked) once per
 * iteration, from a 32-byte block on the machine stack holding n, callback, ctx and i. The
 * callback index is dispatched over the functions whose address the program takes (a
 * verified program passes one of them; anything else faults like a missing helper). */
static void emit_bpf_loop(struct gen *g, size_t pc)
{
	struct jit_buf *b = &g->b;
	const struct jit_analysis *an = g->an;
	int r0 = g->rm[0], r1 = g->rm[1], r2 = g->rm[2], r3 = g->rm[3], r4 = g->rm[4];

	jit_test_rr(b, true, r4, r4);
	size_t j_einval = jit_jcc32(b, CC_NE);
	jit_mov_rr(b, false, X_R11, r1); /* nr_loops is a __u32 */
	jit_alu_ri(b, true, A_CMP, X_R11, (int32_t)NB_BPF_LOOP_MAX);
	size_t j_e2big = jit_jcc32(b, CC_A);
	jit_test_rr(b, true, X_R11, X_R11);
	size_t j_zero = jit_jcc32(b, CC_E);
	jit_push(b, X_R11); /* [rsp+24] n */
	jit_push(b, r2);    /* [rsp+16] callback */
	jit_push(b, r3);    /* [rsp+8] ctx */
	jit_xor_zero(b, X_R11);
	jit_push(b, X_R11); /* [rsp] i */
	size_t loop = b->len;
	jit_load(b, 8, false, r1, X_RSP, 0);
	jit_load(b, 8, false, r2, X_RSP, 8);
	jit_lea(b, X_R11, X_R12, -DEPTH_LIMIT_BYTES);
	jit_alu_rr(b, true, A_CMP, X_RSP, X_R11);
	jcc_stub(g, CC_BE, VM_FAULT_CALL_DEPTH, pc);
	jit_load(b, 8, false, X_R11, X_RSP, 16);
	size_t done[an->cb_cnt ? an->cb_cnt : 1];
	for (size_t k = 0; k < an->cb_cnt; k++) {
		jit_alu_ri(b, true, A_CMP, X_R11, (int32_t)an->cbs[k]);
		size_t skip = jit_jcc32(b, CC_NE);
		size_t at = jit_call32(b);
		jit_patch_rel32(b, at, g->entry_off[an->cbs[k]]);
		done[k] = jit_jmp32(b);
		jit_patch_rel32(b, skip, b->len);
	}
	jmp_stub(g, VM_FAULT_BAD_HELPER, pc, NB_HELPER_LOOP);
	for (size_t k = 0; k < an->cb_cnt; k++)
		jit_patch_rel32(b, done[k], b->len);
	jit_load(b, 8, false, X_R11, X_RSP, 0);
	jit_alu_ri(b, true, A_ADD, X_R11, 1);
	jit_store_reg(b, 8, X_RSP, 0, X_R11);
	jit_test_rr(b, true, r0, r0);
	size_t j_break = jit_jcc32(b, CC_NE);
	jit_load(b, 8, false, X_R10, X_RSP, 24);
	jit_alu_rr(b, true, A_CMP, X_R11, X_R10);
	size_t j_loop = jit_jcc32(b, CC_B);
	jit_patch_rel32(b, j_loop, loop);
	jit_mov_rr(b, true, r0, X_R10); /* all ran: n */
	size_t j_pop = jit_jmp32(b);
	jit_patch_rel32(b, j_break, b->len);
	jit_mov_rr(b, true, r0, X_R11); /* stopped: iterations run */
	jit_patch_rel32(b, j_pop, b->len);
	jit_alu_ri(b, true, A_ADD, X_RSP, 32);
	size_t j_end1 = jit_jmp32(b);
	jit_patch_rel32(b, j_einval, b->len);
	jit_mov_imm64(b, r0, (uint64_t)-EINVAL);
	size_t j_end2 = jit_jmp32(b);
	jit_patch_rel32(b, j_e2big, b->len);
	jit_mov_imm64(b, r0, (uint64_t)-E2BIG);
	size_t j_end3 = jit_jmp32(b);
	jit_patch_rel32(b, j_zero, b->len);
	jit_xor_zero(b, r0);
	jit_patch_rel32(b, j_end1, b->len);
	jit_patch_rel32(b, j_end2, b->len);
	jit_patch_rel32(b, j_end3, b->len);
}

static void emit_helper_call(struct gen *g, const struct bpf_insn *in, size_t pc)
{
	struct jit_buf *b = &g->b;
	int32_t id = in->imm;
	const struct vm_program *prog = g->prog;

	if (id < 0 || id >= NB_HELPER_MAX || !prog->helpers || !prog->helpers[id]) {
		jmp_stub(g, VM_FAULT_BAD_HELPER, pc, id);
		return;
	}
	if (g->an->inline_map[pc]) {
		emit_inline_lookup(g, g->an->inline_map[pc]);
		return;
	}
	if (id == NB_HELPER_LOOP) {
		emit_bpf_loop(g, pc);
		return;
	}
	/* homes of r6..r9 that the helper may clobber (only under a permuted map) */
	int saved[4], n_saved = 0;
	for (int r = 6; r <= 9; r++)
		if (is_caller_saved(g->rm[r]))
			saved[n_saved++] = g->rm[r];
	for (int i = 0; i < n_saved; i++)
		jit_push(b, saved[i]);
	if (n_saved % 2)
		jit_alu_ri(b, true, A_SUB, X_RSP, 8);
	bool args_in_place = true;
	for (int r = 1; r <= 5; r++)
		if (g->rm[r] != arg_regs[r - 1])
			args_in_place = false;
	if (!args_in_place) { /* parallel move through the stack */
		for (int r = 1; r <= 5; r++)
			jit_push(b, g->rm[r]);
		for (int r = 5; r >= 1; r--)
			jit_pop(b, arg_regs[r - 1]);
	}
	jit_mov_imm64(b, X_R11, (uint64_t)(uintptr_t)prog->helpers[id]);
	jit_call_reg(b, X_R11);
	if (g->rm[0] != X_RAX)
		jit_mov_rr(b, true, g->rm[0], X_RAX);
	if (n_saved % 2)
		jit_alu_ri(b, true, A_ADD, X_RSP, 8);
	for (int i = n_saved - 1; i >= 0; i--)
		jit_pop(b, saved[i]);
}

static void emit_local_call(struct gen *g, const struct bpf_insn *in, size_t pc)
{
	struct jit_buf *b = &g->b;
	/* depth from RSP: this frame is the BPF_MAX_CALL_DEPTH-th when RSP is that deep */
	jit_lea(b, X_R11, X_R12, -DEPTH_LIMIT_BYTES);
	jit_alu_rr(b, true, A_CMP, X_RSP, X_R11);
	jcc_stub(g, CC_BE, VM_FAULT_CALL_DEPTH, pc);
	size_t at = jit_call32(b);
	jit_patch_rel32(b, at, g->entry_off[pc + in->imm + 1]);
}

/* ---- memory ---- */

static void emit_atomic(struct gen *g, const struct bpf_insn *in)
{
	struct jit_buf *b = &g->b;
	int size = BPF_SIZE(in->code) == BPF_DW ? 8 : 4;
	bool w = size == 8;
	int base = g->rm[in->dst_reg], src = g->rm[in->src_reg];
	int16_t off = in->off;

	switch (in->imm) {
	case BPF_ADD:
		jit_lock_alu_mr(b, size, A_ADD, base, off, src);
		return;
	case BPF_OR:
		jit_lock_alu_mr(b, size, A_OR, base, off, src);
		return;
	case BPF_AND:
		jit_lock_alu_mr(b, size, A_AND, base, off, src);
		return;
	case BPF_XOR:
		jit_lock_alu_mr(b, size, A_XOR, base, off, src);
		return;
	case BPF_ADD | BPF_FETCH:
		jit_lock_xadd(b, size, base, off, src);
		return;
	case BPF_XCHG:
		jit_xchg_mr(b, size, base, off, src);
		return;
	case BPF_CMPXCHG: {
		int r0 = g->rm[0];
		jit_lea(b, X_R10, base, off);
		int opnd = src;
		if (r0 != X_RAX) {
			jit_mov_rr(b, true, X_R9, X_RAX);
			jit_mov_rr(b, true, X_RAX, r0);
			if (src == X_RAX)
				opnd = X_R9;
		}
		jit_lock_cmpxchg(b, size, X_R10, 0, opnd);
		if (r0 != X_RAX) {
			jit_mov_rr(b, w, r0, X_RAX);
			jit_mov_rr(b, true, X_RAX, X_R9);
		} else if (!w) {
			jit_mov_rr(b, false, X_RAX, X_RAX);
		}
		return;
	}
	default: { /* fetch or/and/xor: compare-exchange loop */
		enum jit_alu op = (in->imm & ~BPF_FETCH) == BPF_OR    ? A_OR
				  : (in->imm & ~BPF_FETCH) == BPF_AND ? A_AND
								      : A_XOR;
		jit_lea(b, X_R10, base, off);
		jit_mov_rr(b, true, X_R9, X_RAX);
		int opnd = src == X_RAX ? X_R9 : src;
		jit_load(b, size, false, X_RAX, X_R10, 0);
		size_t retry = b->len;
		jit_mov_rr(b, w, X_R11, X_RAX);
		jit_alu_rr(b, w, op, X_R11, opnd);
		jit_lock_cmpxchg(b, size, X_R10, 0, X_R11);
		size_t at = jit_jcc8(b, CC_NE);
		jit_patch_rel8(b, at, retry);
		if (src != X_RAX) {
			jit_mov_rr(b, w, src, X_RAX);
			jit_mov_rr(b, true, X_RAX, X_R9);
		}
		return;
	}
	}
}

/* ---- driver ---- */

static void emit_insn(struct gen *g, size_t pc, bool in_main)
{
	const struct bpf_insn *in = &g->prog->insns[pc];
	struct jit_buf *b = &g->b;
	int d = g->rm[in->dst_reg], s = g->rm[in->src_reg];
	const struct jit_analysis *an = g->an;

	switch (BPF_CLASS(in->code)) {
	case BPF_ALU:
	case BPF_ALU64:
		emit_alu(g, in);
		return;
	case BPF_LD: {
		uint64_t v = (uint32_t)in[0].imm | ((uint64_t)(uint32_t)in[1].imm << 32);
		jit_mov_imm64(b, d, v);
		return;
	}
	case BPF_LDX:
		jit_load(b, (int)isa_size_bytes(in->code), BPF_MODE(in->code) == BPF_MEMSX, d, s,
			 in->off);
		return;
	case BPF_ST:
		jit_store_imm(b, (int)isa_size_bytes(in->code), d, in->off, in->imm);
		return;
	case BPF_STX:
		if (BPF_MODE(in->code) == BPF_ATOMIC)
			emit_atomic(g, in);
		else
			jit_store_reg(b, (int)isa_size_bytes(in->code), d, in->off, s);
		return;
	default: /* JMP, JMP32 */
		break;
	}
	uint8_t op = BPF_OP(in->code);
	if (op == BPF_JA) {
		long delta = BPF_CLASS(in->code) == BPF_JMP32 ? in->imm : in->off;
		jmp_to(g, g->off[(long)pc + delta + 1]);
	} else if (op == BPF_CALL) {
		if (in->src_reg == BPF_PSEUDO_CALL)
			emit_local_call(g, in, pc);
		else
			emit_helper_call(g, in, pc);
	} else if (op == BPF_EXIT) {
		if (!in_main)
			sub_epilogue(g);
		else if (!(pc + 1 == an->insn_cnt || an->func_start[pc + 1]))
			jmp_to(g, g->epi_off[g->copy]);
	} else {
		emit_cond_jump(g, in, pc);
	}
}

static void emit_all(struct gen *g)
{
	const struct jit_analysis *an = g->an;
	size_t n = an->insn_cnt;
	bool in_main = true;

	g->stub_cnt = 0;
	main_prologue(g);
	for (size_t pc = 0; pc < n; pc++) {
		if (pc > 0 && an->func_start[pc]) {
			if (in_main)
				main_epilogue(g);
			in_main = false;
			g->entry_off[pc] = g->b.len;
			sub_prologue(g);
		}
		g->off[pc] = g->b.len;
		if (an->lddw_tail[pc])
			continue;
		emit_insn(g, pc, in_main);
	}
	g->off[n] = g->b.len;
	if (an->falls_off_end)
		jmp_stub(g, VM_FAULT_PC_OOB, n, 0);
	if (in_main)
		main_epilogue(g);
	if (an->may_fault) {
		fault_path(g);
		for (size_t k = 0; k < g->stub_cnt; k++) {
			g->stub_off[k] = g->b.len;
			jit_mov_imm64(&g->b, X_R11, g->stub_info[k]);
			jmp_to(g, g->fault_off);
		}
		g->main_end = g->b.len;
		return;
	}
	g->main_end = g->b.len;
	/* Code that cannot fault is a single function (local calls and bpf_loop may fault):
	 * emit it a second time as the store entry, 16-byte aligned (int3 padding). The
	 * runtime's decision path tail-calls it, so no frame of its own stays around the
	 * program. Same emit calls in both passes, so the sizes match. */
	while (g->b.len % 16)
		jit_emit_u8(&g->b, 0xcc);
	size_t *main_off = g->off;
	g->copy = 1;
	g->store_result = true;
	g->off = g->off_store;
	g->store_entry = g->b.len;
	main_prologue(g);
	for (size_t pc = 0; pc < n; pc++) {
		g->off[pc] = g->b.len;
		if (!an->lddw_tail[pc])
			emit_insn(g, pc, true);
	}
	g->off[n] = g->b.len;
	main_epilogue(g);
	g->off = main_off;
	g->copy = 0;
	g->store_result = false;
}

int jit_generate(const struct vm_program *prog, const struct jit_analysis *an,
		 const uint8_t reg_map[BPF_NREGS], struct vm_jit_image *img, char *err,
		 size_t errlen)
{
	struct gen g;
	int rc = 0;
	memset(&g, 0, sizeof(g));
	g.prog = prog;
	g.an = an;
	g.rm = reg_map;
	g.raw = &img->raw_fault;
	g.off = calloc(an->insn_cnt + 1, sizeof(size_t));
	g.entry_off = calloc(an->insn_cnt + 1, sizeof(size_t));
	g.off_store = calloc(an->insn_cnt + 1, sizeof(size_t));
	if (!g.off || !g.entry_off || !g.off_store)
		goto oom;

	emit_all(&g); /* sizing pass: records every offset */
	if (g.oom)
		goto oom;
	size_t size = g.b.len;
	uint8_t *mem = jit_mem_alloc(size, err, errlen);
	if (!mem) {
		rc = -ENOMEM;
		goto out;
	}
	g.b.code = mem;
	g.b.cap = size;
	g.b.len = 0;
	emit_all(&g);
	if (g.oom || g.b.len != size) {
		jit_mem_free(mem, size);
		if (err && errlen)
			snprintf(err, errlen, "jit: internal error: code size changed between passes "
				 "(%zu, then %zu bytes)", size, g.b.len);
		rc = g.oom ? -ENOMEM : -EINVAL;
		goto out;
	}
	rc = jit_mem_seal(mem, size, err, errlen);
	if (rc) {
		jit_mem_free(mem, size);
		goto out;
	}
	img->code = mem;
	img->map_size = size;
	img->code_len = g.main_end; /* the store entry's copy is not counted */
	img->entry = (vm_jit_fn)(uintptr_t)mem;
	img->may_fault = g.an->may_fault;
	img->run = (uint64_t(*)(uint64_t, uint64_t, struct vm_jit_fault_rec *))(uintptr_t)(
		mem + g.entry_b);
	img->store = g.an->may_fault ? NULL : (vm_jit_store_fn)(uintptr_t)(mem + g.store_entry);
	goto out;
oom:
	rc = -ENOMEM;
	if (err && errlen)
		snprintf(err, errlen, "jit: out of memory");
out:
	free(g.off);
	free(g.off_store);
	free(g.entry_off);
	free(g.stub_off);
	free(g.stub_info);
	return rc;
}

#else /* not x86-64 */

int jit_generate(const struct vm_program *prog, const struct jit_analysis *an,
		 const uint8_t reg_map[BPF_NREGS], struct vm_jit_image *img, char *err,
		 size_t errlen)
{
	(void)prog;
	(void)an;
	(void)reg_map;
	(void)img;
	if (err && errlen)
		snprintf(err, errlen, "jit: no JIT for this architecture");
	return -ENOTSUP;
}

#endif

/* Random program generator of the differential test; see jit_diff_gen.h for the rules
 * that keep every program deterministic. A program is built from "units" (one or a few
 * instructions that belong together); jumps only land on unit starts, so never inside an
 * LDDW, a loop or a call sequence. */
#include "jit_diff_gen.h"

#include <stdbool.h>
#include <string.h>

#include "isa/insn_build.h"
#include "verifier/hooks.h"

uint64_t dg_next(struct dg_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

static unsigned below(struct dg_rng *r, unsigned n)
{
	return (unsigned)(dg_next(r) % n);
}

static int chance(struct dg_rng *r, unsigned pct)
{
	return below(r, 100) < pct;
}

#define MAX_UNITS 256

struct fixup {
	size_t at;      /* instruction to patch */
	unsigned kind;  /* 0: jump to unit `target`, 1: local call to function `target` */
	unsigned target;
};

struct dg {
	struct dg_rng *r;
	const struct dg_params *p;
	struct bpf_insn *out;
	size_t n;
	int fn, nfuncs;
	bool recursion; /* the last function calls itself: depth fault */
	size_t func_start[DG_MAX_FUNCS];
	size_t unit_start[MAX_UNITS + 1];
	struct fixup fix[2 * MAX_UNITS + 64];
	size_t nfix;
	struct fixup calls[MAX_UNITS * DG_MAX_FUNCS];
	size_t ncalls;
};

static void emit(struct dg *g, struct bpf_insn in)
{
	if (g->n < DG_MAX_INSNS)
		g->out[g->n++] = in;
}

static void emit_lddw(struct dg *g, unsigned reg, uint64_t v)
{
	emit(g, INSN(BPF_LDDW, reg, 0, 0, (uint32_t)v));
	emit(g, INSN(0, 0, 0, 0, (uint32_t)(v >> 32)));
}

static int32_t rand_imm(struct dg_rng *r)
{
	static const int32_t special[] = { 0,  1,  -1, INT32_MIN, INT32_MAX, 2,   -2, 7,
					   31, 32, 63, 64,        0x80,      0xff, 0xffff, 0x7fff,
					   -0x80, 0x10000, 3 };
	switch (below(r, 3)) {
	case 0: return special[below(r, sizeof(special) / sizeof(special[0]))];
	case 1: return (int32_t)below(r, 17) - 8;
	default: return (int32_t)(uint32_t)dg_next(r);
	}
}

static uint64_t rand_u64(struct dg_rng *r)
{
	static const uint64_t special[] = {
		0, 1, ~0ull, 0x8000000000000000ull, 0x7fffffffffffffffull, 0x80000000ull,
		0xffffffffull, 0x100000000ull, 0xffffffff80000000ull, 0x7fffffffull, 0xff, 0x80,
	};
	switch (below(r, 3)) {
	case 0: return special[below(r, sizeof(special) / sizeof(special[0]))];
	case 1: return (uint64_t)(int64_t)((int)below(r, 33) - 16);
	default: return dg_next(r);
	}
}

static unsigned rand_reg(struct dg_rng *r)
{
	return below(r, 10); /* r0-r9: r10 is only ever a memory base */
}

/* ---- units ---- */

static void unit_set_value(struct dg *g)
{
	unsigned d = rand_reg(g->r);
	switch (below(g->r, 3)) {
	case 0: emit_lddw(g, d, rand_u64(g->r)); break;
	case 1: emit(g, MOV64_K(d, rand_imm(g->r))); break;
	default: emit(g, MOV32_K(d, rand_imm(g->r))); break;
	}
}

static struct bpf_insn rand_alu(struct dg *g, unsigned d, unsigned not_src)
{
	static const uint8_t ops[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR,  BPF_AND,
				       BPF_LSH, BPF_RSH, BPF_NEG, BPF_MOD, BPF_XOR, BPF_MOV,
				       BPF_ARSH, BPF_END };
	struct dg_rng *r = g->r;
	uint8_t op = ops[below(r, sizeof(ops))];
	uint8_t cls = chance(r, 50) ? BPF_ALU64 : BPF_ALU;
	unsigned s = rand_reg(r);
	if (s == not_src)
		s = d;
	bool x = chance(r, 50);
	int16_t off = 0;
	int32_t imm = rand_imm(r);
	switch (op) {
	case BPF_NEG:
		return INSN(cls | BPF_NEG, d, 0, 0, 0);
	case BPF_DIV:
	case BPF_MOD:
		off = (int16_t)below(r, 2); /* signed or unsigned */
		break;
	case BPF_MOV:
		if (x && chance(r, 40)) {
			static const int16_t w[] = { 8, 16, 32 };
			off = w[below(r, cls == BPF_ALU64 ? 3 : 2)];
		}
		break;
	case BPF_END: {
		static const int32_t widths[] = { 16, 32, 64 };
		imm = widths[below(r, 3)];
		if (cls == BPF_ALU64)
			return INSN(BPF_ALU64 | BPF_END | BPF_K, d, 0, 0, imm);
		return INSN(BPF_ALU | BPF_END | (chance(r, 50) ? BPF_TO_BE : BPF_TO_LE), d, 0, 0, imm);
	}
	default:
		break;
	}
	if (x)
		return INSN(cls | op | BPF_X, d, s, off, 0);
	return INSN(cls | op | BPF_K, d, 0, off, imm);
}

static void unit_alu(struct dg *g)
{
	emit(g, rand_alu(g, rand_reg(g->r), 99));
}

static const uint8_t jmp_ops[] = { BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET, BPF_JNE, BPF_JSGT,
				   BPF_JSGE, BPF_JLT, BPF_JLE, BPF_JSLT, BPF_JSLE };

static void add_fix(struct dg *g, unsigned kind, unsigned target)
{
	struct fixup *f = &g->fix[g->nfix++];
	f->at = g->n;
	f->kind = kind;
	f->target = target;
}

static void unit_jump(struct dg *g, unsigned u, unsigned nunits)
{
	struct dg_rng *r = g->r;
	unsigned target = u + 1 + below(r, nunits - u < 6 ? nunits - u : 6);
	add_fix(g, 0, target);
	if (chance(r, 10)) {
		emit(g, chance(r, 50) ? JA(0) : JA32(0));
		return;
	}
	uint8_t op = jmp_ops[below(r, sizeof(jmp_ops))];
	uint8_t cls = chance(r, 50) ? BPF_JMP : BPF_JMP32;
	unsigned d = rand_reg(r);
	if (chance(r, 50))
		emit(g, INSN(cls | op | BPF_X, d, rand_reg(r), 0, 0));
	else
		emit(g, INSN(cls | op | BPF_K, d, 0, 0, rand_imm(r)));
}

/* Counted loop: r_c = 1..3; body (ALU on other registers); r_c -= 1; if r_c != 0 repeat. */
static void unit_loop(struct dg *g)
{
	struct dg_rng *r = g->r;
	unsigned c = 6 + below(r, 4);
	emit(g, MOV64_K(c, 1 + below(r, 3)));
	unsigned body = 1 + below(r, 4);
	for (unsigned i = 0; i < body; i++) {
		unsigned d = rand_reg(r);
		if (d == c)
			d = 0;
		emit(g, rand_alu(g, d, c));
	}
	emit(g, ALU64_K(BPF_SUB, c, 1));
	emit(g, JMP_K(BPF_JNE, c, 0, -(int)(body + 2)));
}

/* Address in the data part of the buffer with `size`-byte alignment if aligned. */
static unsigned data_addr(struct dg_rng *r, unsigned size, bool aligned)
{
	unsigned a = below(r, DG_DATA_BYTES - size + 1);
	return aligned ? a & ~(size - 1) : a;
}

static void unit_mem(struct dg *g)
{
	struct dg_rng *r = g->r;
	static const uint8_t sizes[] = { BPF_B, BPF_H, BPF_W, BPF_DW };
	unsigned kind = below(r, 4); /* 0 load, 1 store imm, 2 store reg, 3 atomic */
	uint8_t sz = kind == 3 ? (chance(r, 50) ? BPF_W : BPF_DW) : sizes[below(r, 4)];
	unsigned size = isa_size_bytes(sz);
	unsigned base;
	int32_t off;
	if (chance(r, 40)) { /* stack window [-64, 0) */
		base = BPF_REG_FP;
		unsigned slot = below(r, 64 / size);
		off = -(int32_t)((slot + 1) * size);
		if (kind != 3 && chance(r, 30) && size > 1) /* unaligned */
			off = -(int32_t)(size + below(r, 64 - size + 1 - size));
	} else {
		base = rand_reg(r);
		unsigned bias = below(r, 129);
		emit_lddw(g, base, g->p->mem + bias);
		off = (int32_t)data_addr(r, size, kind == 3 || chance(r, 50)) - (int32_t)bias;
	}
	unsigned v = rand_reg(r);
	switch (kind) {
	case 0:
		if (sz != BPF_DW && chance(r, 40))
			emit(g, LDXSX(sz, v, base, off));
		else
			emit(g, LDX(sz, v, base, off));
		break;
	case 1:
		emit(g, ST(sz, base, off, rand_imm(r)));
		break;
	case 2:
		emit(g, STX(sz, base, v, off));
		break;
	default: {
		static const int32_t ops[] = { BPF_ADD, BPF_OR, BPF_AND, BPF_XOR,
					       BPF_ADD | BPF_FETCH, BPF_OR | BPF_FETCH,
					       BPF_AND | BPF_FETCH, BPF_XOR | BPF_FETCH,
					       BPF_XCHG, BPF_CMPXCHG };
		int32_t op = ops[below(r, 10)];
		if (op == BPF_CMPXCHG && base != 0 && chance(r, 60)) {
			/* make the exchange succeed, sometimes with garbage above bit 31 of r0
			 * (a 32-bit cmpxchg must still zero-extend r0) */
			emit(g, LDX(sz, 0, base, off));
			unsigned t = 1 + below(r, 9);
			if (sz == BPF_W && t != base && chance(r, 60)) {
				emit_lddw(g, t, dg_next(r) & 0xffffffff00000000ull);
				emit(g, ALU64_X(BPF_OR, 0, t));
			}
		}
		emit(g, ATOMIC(sz, base, v, off, op));
		break;
	}
	}
}

static void reload_args(struct dg *g)
{
	for (unsigned a = 1; a <= 5; a++)
		emit(g, MOV64_K(a, rand_imm(g->r)));
}

static void unit_helper(struct dg *g)
{
	struct dg_rng *r = g->r;
	for (unsigned a = 1; a <= 5; a++)
		if (chance(r, 30))
			emit(g, MOV64_K(a, rand_imm(r)));
	emit(g, CALL(chance(r, 3) ? DG_HELPER_MISSING : DG_HELPER_MIX));
	reload_args(g);
}

/* bpf_map_lookup_elem on the array map with a key from the stack window, then a read
 * through the result when it is not NULL. The JIT inlines this (same basic block). */
static void unit_map_lookup(struct dg *g)
{
	struct dg_rng *r = g->r;
	if (chance(r, 60))
		emit(g, ST(BPF_W, BPF_REG_FP, -8, (int32_t)below(r, g->p->map_max + 2)));
	emit_lddw(g, 1, g->p->map);
	emit(g, MOV64_X(2, BPF_REG_FP));
	emit(g, ALU64_K(BPF_ADD, 2, -8));
	emit(g, CALL(NB_HELPER_MAP_LOOKUP_ELEM));
	reload_args(g);
	unsigned v = 1 + below(r, 9);
	emit(g, JMP_K(BPF_JEQ, 0, 0, 1));
	emit(g, LDX(BPF_DW, v, 0, 0));
}

static void unit_call(struct dg *g)
{
	struct dg_rng *r = g->r;
	unsigned callee = (unsigned)g->fn + 1 + below(r, (unsigned)(g->nfuncs - g->fn - 1));
	for (unsigned a = 1; a <= 5; a++)
		if (chance(r, 30))
			emit(g, MOV64_K(a, rand_imm(r)));
	struct fixup *f = &g->calls[g->ncalls++];
	f->at = g->n;
	f->kind = 1;
	f->target = callee;
	emit(g, CALL_LOCAL(0));
}

/* ---- functions ---- */

static void func_prologue(struct dg *g)
{
	for (int k = 1; k <= 8; k++)
		emit(g, ST(BPF_DW, BPF_REG_FP, -8 * k, rand_imm(g->r)));
	if (g->fn == 0)
		for (unsigned i = 0; i < 3; i++)
			unit_set_value(g);
}

/* Dumps r0-r9 and the stack window into this function's part of the buffer. */
static void func_epilogue(struct dg *g)
{
	for (int reg = 0; reg < 10; reg++)
		emit(g, STX(BPF_DW, BPF_REG_FP, reg, -72 - 8 * reg));
	emit_lddw(g, 1, g->p->mem + DG_DATA_BYTES + (uint64_t)g->fn * DG_DUMP_BYTES);
	for (int k = 0; k < 10; k++) {
		emit(g, LDX(BPF_DW, 2, BPF_REG_FP, -72 - 8 * k));
		emit(g, STX(BPF_DW, 1, 2, 8 * k));
	}
	for (int k = 0; k < 8; k++) {
		emit(g, LDX(BPF_DW, 2, BPF_REG_FP, -8 - 8 * k));
		emit(g, STX(BPF_DW, 1, 2, 80 + 8 * k));
	}
	emit(g, EXIT());
}

static void gen_function(struct dg *g)
{
	struct dg_rng *r = g->r;
	g->func_start[g->fn] = g->n;
	g->nfix = 0;
	func_prologue(g);
	unsigned nunits = (g->fn == 0 ? 10 : 4) + below(r, g->fn == 0 ? 60 : 25);
	for (unsigned u = 0; u < nunits; u++) {
		g->unit_start[u] = g->n;
		unsigned pick = below(r, 100);
		if (pick < 30)
			unit_alu(g);
		else if (pick < 40)
			unit_set_value(g);
		else if (pick < 55)
			unit_jump(g, u, nunits);
		else if (pick < 75)
			unit_mem(g);
		else if (pick < 80)
			unit_loop(g);
		else if (pick < 85)
			unit_helper(g);
		else if (pick < 90 && g->p->map)
			unit_map_lookup(g);
		else if (pick < 95 && g->fn + 1 < g->nfuncs)
			unit_call(g);
		else if (pick < 96 && g->recursion && g->fn > 0 && g->fn == g->nfuncs - 1)
			emit(g, CALL_LOCAL(-1 - (int)(g->n - g->func_start[g->fn])));
		else
			unit_alu(g);
	}
	g->unit_start[nunits] = g->n;
	func_epilogue(g);
	for (size_t i = 0; i < g->nfix; i++) {
		struct fixup *f = &g->fix[i];
		long delta = (long)g->unit_start[f->target] - (long)f->at - 1;
		if (BPF_CLASS(g->out[f->at].code) == BPF_JMP32 && BPF_OP(g->out[f->at].code) == BPF_JA)
			g->out[f->at].imm = (int32_t)delta;
		else
			g->out[f->at].off = (int16_t)delta;
	}
}

size_t dg_generate(struct dg_rng *r, const struct dg_params *p, struct bpf_insn *out)
{
	struct dg g;
	memset(&g, 0, sizeof(g));
	g.r = r;
	g.p = p;
	g.out = out;
	g.nfuncs = 1 + (int)below(r, DG_MAX_FUNCS);
	g.recursion = chance(r, 5);
	for (g.fn = 0; g.fn < g.nfuncs; g.fn++)
		gen_function(&g);
	for (size_t i = 0; i < g.ncalls; i++) {
		struct fixup *f = &g.calls[i];
		g.out[f->at].imm = (int32_t)((long)g.func_start[f->target] - (long)f->at - 1);
	}
	return g.n;
}

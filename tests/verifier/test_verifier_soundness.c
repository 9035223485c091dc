/* Verifier soundness: random well-formed programs (context, stack and map-value loads and
 * stores at random offsets, variable offsets (map values, and the stack: buf[i & m]), branches, bounded and unbounded loops, NULL
 * checks or their absence, spills, helper calls, divisions, global data). Every program the
 * verifier accepts is linked by hand (map pseudo LDDWs replaced by real addresses) and run
 * many times in the checked interpreter with random contexts and map contents, with one
 * checked region per run of adjacent context fields of the same permission (the verifier
 * accepts a store that tiles whole adjacent output fields, as clang merges them; that each
 * field's permission is respected byte by byte is test_verifier_insns' exhaustive table test).
 * No fault may occur.
 * Usage: test_verifier_soundness [programs] [runs per accepted program] [seed] */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "insn_macros.h"
#include "maps/map.h"
#include "test_util.h"
#include "verifier/verifier.h"
#include "vm/vm.h"

static uint64_t rng;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}
static unsigned rn(unsigned n) { return (unsigned)(rnd() % n); }

/* ---- maps ---- */
enum { M_STATS, M_ARR, M_DATA, M_RODATA, M_COUNT };
static const struct nb_map_def defs[M_COUNT] = {
	{ .name = "stats", .origin = NB_MAP_ORIGIN_BTF, .type = NB_MAP_TYPE_HASH, .key_size = 8, .value_size = 16, .max_entries = 8 },
	{ .name = "arr", .origin = NB_MAP_ORIGIN_BTF, .type = NB_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 128, .max_entries = 3 },
	{ .name = ".data", .origin = NB_MAP_ORIGIN_DATA, .type = NB_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 64, .max_entries = 1 },
	{ .name = ".rodata", .origin = NB_MAP_ORIGIN_RODATA, .type = NB_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 32, .max_entries = 1, .map_flags = NB_MAP_F_RDONLY_PROG },
};
static struct nb_map *maps[M_COUNT];

static uint64_t h_lookup(uint64_t m, uint64_t k, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a; (void)b; (void)c;
	return (uint64_t)(uintptr_t)map_lookup((struct nb_map *)(uintptr_t)m, (const void *)(uintptr_t)k);
}
static uint64_t h_update(uint64_t m, uint64_t k, uint64_t v, uint64_t f, uint64_t c)
{
	(void)c;
	return (uint64_t)(int64_t)map_update((struct nb_map *)(uintptr_t)m, (const void *)(uintptr_t)k,
					     (const void *)(uintptr_t)v, f & 3);
}
static uint64_t h_delete(uint64_t m, uint64_t k, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a; (void)b; (void)c;
	return (uint64_t)(int64_t)map_delete((struct nb_map *)(uintptr_t)m, (const void *)(uintptr_t)k);
}
static uint64_t h_ktime(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)a; (void)b; (void)c; (void)d; (void)e;
	return rnd();
}
static uint64_t h_printk(uint64_t fmt, uint64_t len, uint64_t a, uint64_t b, uint64_t c)
{
	(void)a; (void)b; (void)c;
	volatile uint8_t sum = 0; /* touch the buffer like the real helper */
	for (uint64_t i = 0; i < len; i++)
		sum += ((const uint8_t *)(uintptr_t)fmt)[i];
	return sum;
}
static uint64_t h_prandom(uint64_t a, uint64_t b, uint64_t c, uint64_t d, uint64_t e)
{
	(void)a; (void)b; (void)c; (void)d; (void)e;
	return (uint32_t)rnd();
}

/* ---- generator ---- */
#define MAXI 400
static struct bpf_insn prog[MAXI];
static int n;
static bool in_loop;

static void emit(struct bpf_insn i) { if (n < MAXI) prog[n++] = i; }
static void emit2(struct bpf_insn a, struct bpf_insn b) { emit(a); emit(b); }
static int val_reg(void)
{
	static const int regs[] = { 0, 2, 3, 4, 5, 7, 8 };
	static const int loop_regs[] = { 2, 3, 4, 5, 7, 8 };
	return in_loop ? loop_regs[rn(6)] : regs[rn(7)];
}
static int any_reg(void) { return rn(8) == 0 ? 6 : (rn(10) == 0 ? 10 : val_reg()); }
static uint8_t rsize(void) { static const uint8_t s[] = { BPF_B, BPF_H, BPF_W, BPF_DW }; return s[rn(4)]; }
static int32_t rimm(void)
{
	switch (rn(5)) {
	case 0: return (int32_t)rnd();
	case 1: return -(int32_t)rn(8);
	default: return (int32_t)rn(70);
	}
}

/* a context offset/size pair: usually a valid read of a field, sometimes anything */
static int16_t ctx_off_sized(uint8_t *sz)
{
	const struct nb_hook_desc *h = hook_desc(NB_HOOK_TUNER);
	if (rn(8) == 0) {
		*sz = rsize();
		return (int16_t)((int)rn(172) - 4);
	}
	const struct nb_ctx_field *f = &h->fields[rn((unsigned)h->field_cnt)];
	unsigned size = f->size >= 8 ? 8 : f->size;
	if (rn(3) == 0)
		size = 1u << rn(4);
	if (size > f->size)
		size = f->size >= 4 ? 4 : f->size;
	*sz = size == 1 ? BPF_B : size == 2 ? BPF_H : size == 4 ? BPF_W : BPF_DW;
	unsigned slots = f->size / size;
	return (int16_t)(f->off + size * rn(slots ? slots : 1));
}

static void gen_simple(void);

static void gen_ctx_load(void)
{
	uint8_t sz;
	int16_t off = ctx_off_sized(&sz);
	emit(LDX(sz, val_reg(), 6, off));
}
static void gen_ctx_store(void)
{
	uint8_t sz = BPF_W;
	int16_t off = rn(4) ? (int16_t)(140 + 4 * rn(3)) : ctx_off_sized(&sz);
	if (rn(2))
		emit(STX(sz, 6, any_reg(), off));
	else
		emit(ST(sz, 6, off, rimm()));
}
static int16_t stack_off(void)
{
	if (rn(8) == 0)
		return (int16_t)(-(int)rn(530) + 8);
	return (int16_t)(-8 * (1 + (int)rn(8)) + (rn(6) == 0 ? (int)rn(8) : 0));
}
static void gen_stack_store(void)
{
	if (rn(2))
		emit(STX(rn(2) ? BPF_DW : rsize(), 10, rn(4) ? val_reg() : any_reg(), stack_off()));
	else
		emit(ST(rsize(), 10, stack_off(), rimm()));
}
static void gen_stack_load(void) { emit(LDX(rn(2) ? BPF_DW : rsize(), val_reg(), 10, stack_off())); }
/* buf[i & mask] (issue 24 item 5b): a stack pointer plus a masked (sometimes shifted,
 * sometimes unmasked) number, then a load, store or atomic through it */
static bool stack_var_emitted; /* this program has one (counted when accepted) */
static void gen_stack_var(void)
{
	stack_var_emitted = true;
	static const int32_t masks[] = { 1, 3, 7, 8, 15, 24, 31, 63, 0xff, -8 };
	int idx = val_reg(), p = val_reg();
	while (p == idx)
		p = val_reg();
	if (rn(3) == 0)
		for (int s = 1 + (int)rn(4); s > 0; s--)
			emit(ST(BPF_DW, 10, (int16_t)(-8 * (int)rn(9) - 8), rimm()));
	if (rn(8))
		emit(INSN((rn(4) ? BPF_ALU64 : BPF_ALU) | BPF_AND | BPF_K, idx, 0, 0,
			  rn(10) ? masks[rn(sizeof(masks) / sizeof(masks[0]))] : rimm()));
	if (rn(4) == 0)
		emit(ALU64_IMM(BPF_LSH, idx, (int32_t)rn(4)));
	emit(MOV64_REG(p, 10));
	emit(ALU64_IMM(BPF_ADD, p, -8 * (1 + (int)rn(10)) + (rn(5) ? 0 : (int)rn(8))));
	emit(ALU64_REG(rn(8) ? BPF_ADD : BPF_SUB, p, idx));
	int16_t off = (int16_t)(rn(4) ? 0 : (int)rn(16) - 8);
	switch (rn(5)) {
	case 0: case 1: emit(LDX(rsize(), val_reg(), p, off)); break;
	case 2: emit(STX(rsize(), p, rn(6) ? val_reg() : any_reg(), off)); break;
	case 3: emit(ST(rsize(), p, off, rimm())); break;
	default:
		emit(INSN(BPF_STX | BPF_ATOMIC | (rn(2) ? BPF_DW : BPF_W), p, val_reg(), off,
			  rn(2) ? BPF_ADD : (BPF_ADD | BPF_FETCH)));
		break;
	}
}
static void gen_alu(void)
{
	static const uint8_t ops[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_OR, BPF_AND, BPF_LSH,
				       BPF_RSH, BPF_NEG, BPF_MOD, BPF_XOR, BPF_MOV, BPF_ARSH };
	uint8_t op = ops[rn(sizeof(ops))];
	bool alu32 = rn(3) == 0;
	int dst = val_reg();
	if (op == BPF_NEG) {
		emit(INSN((alu32 ? BPF_ALU : BPF_ALU64) | BPF_NEG, dst, 0, 0, 0));
	} else if (rn(2)) {
		int32_t imm = rimm();
		if ((op == BPF_LSH || op == BPF_RSH || op == BPF_ARSH) && rn(4))
			imm &= alu32 ? 31 : 63;
		emit(INSN((alu32 ? BPF_ALU : BPF_ALU64) | op | BPF_K, dst, 0, 0, imm));
	} else {
		emit(INSN((alu32 ? BPF_ALU : BPF_ALU64) | op | BPF_X, dst, any_reg(), 0, 0));
	}
}
/* a value pointer into map m in r0, maybe NULL-checked, then accesses */
static void gen_access_via(int preg, int map)
{
	uint32_t vs = defs[map].value_size;
	int k = 1 + (int)rn(3);
	for (int i = 0; i < k; i++) {
		int p = preg;
		if (rn(3) == 0) { /* variable offset */
			int ir = rn(2) ? 7 : 8;
			if (!in_loop || ir != 9) {
				emit(LDX(BPF_W, ir, 6, (int16_t)(24 + 4 * rn(6))));
				static const int32_t masks[] = { 7, 15, 31, 63, 127, 255 };
				emit(ALU64_IMM(BPF_AND, ir, masks[rn(6)]));
				if (rn(2))
					emit(JMP_IMM(BPF_JGT, ir, (int32_t)rn(vs), 1 + 1 + 1));
				else
					emit(JA(0));
				emit(MOV64_REG(1, p));
				emit(ALU64_REG(BPF_ADD, 1, ir));
				emit(LDX(rsize(), val_reg(), 1, (int16_t)rn(8)));
				continue;
			}
		}
		int16_t off = (int16_t)(rn(12) == 0 ? (int)rn(vs + 16) - 4 : (int)(rn(vs / 8) * 8));
		if (rn(2))
			emit(LDX(rsize(), val_reg(), p, off));
		else if (rn(2))
			emit(STX(rsize(), p, rn(8) ? val_reg() : any_reg(), off));
		else
			emit(ST(rsize(), p, off, rimm()));
	}
}
static void gen_lookup(void)
{
	int map = rn(3) ? M_ARR : M_STATS;
	if (map == M_ARR) {
		if (rn(10))
			emit(ST(BPF_W, 10, -8, (int32_t)rn(4)));
	} else if (rn(10)) {
		emit(ST(BPF_DW, 10, -8, (int32_t)rn(10)));
	}
	emit(MOV64_REG(2, 10));
	emit(ALU64_IMM(BPF_ADD, 2, -8));
	emit2(LD_MAP(1, map));
	emit(CALL(1));
	for (int r = 2; r <= 5; r++)
		if (rn(10))
			emit(MOV64_IMM(r, rimm()));
	if (rn(3) == 0) { /* copy or spill first */
		if (rn(2))
			emit(MOV64_REG(9 - in_loop, 0));
		else
			emit(STX(BPF_DW, 10, 0, -16));
	}
	int jmp = -1;
	if (rn(8)) {
		jmp = n;
		emit(JMP_IMM(BPF_JEQ, 0, 0, 0));
	}
	gen_access_via(0, map);
	if (jmp >= 0 && jmp < n)
		prog[jmp].off = (int16_t)(n - jmp - 1);
	if (rn(10))
		emit(MOV64_IMM(0, rimm()));
}
static void gen_global(void)
{
	int map = rn(2) ? M_DATA : M_RODATA;
	emit2(LD_MAP_VALUE(1, map, (int32_t)(rn(4) ? 0 : rn(defs[map].value_size))));
	gen_access_via(1, map);
}
static void gen_helper(void)
{
	switch (rn(5)) {
	case 0: emit(CALL(5)); break;
	case 1: emit(CALL(7)); break;
	case 2:
		emit2(LD_MAP_VALUE(1, M_RODATA, 0));
		emit(MOV64_IMM(2, (int32_t)(1 + rn(34))));
		emit(CALL(6));
		break;
	case 3:
		emit(ST(BPF_DW, 10, -24, (int32_t)rn(10)));
		emit(ST(BPF_DW, 10, -40, rimm()));
		if (rn(4))
			emit(ST(BPF_DW, 10, -32, rimm()));
		emit2(LD_MAP(1, M_STATS));
		emit(MOV64_REG(2, 10));
		emit(ALU64_IMM(BPF_ADD, 2, -24));
		emit(MOV64_REG(3, 10));
		emit(ALU64_IMM(BPF_ADD, 3, -40));
		emit(MOV64_IMM(4, 0));
		emit(CALL(2));
		break;
	default:
		emit(ST(BPF_DW, 10, -24, (int32_t)rn(10)));
		emit2(LD_MAP(1, M_STATS));
		emit(MOV64_REG(2, 10));
		emit(ALU64_IMM(BPF_ADD, 2, -24));
		emit(CALL(3));
	}
	for (int r = 2; r <= 5; r++)
		if (rn(10))
			emit(MOV64_IMM(r, rimm()));
}
static void gen_branch(void)
{
	static const uint8_t ops[] = { BPF_JEQ, BPF_JGT, BPF_JGE, BPF_JSET, BPF_JNE, BPF_JSGT,
				       BPF_JSGE, BPF_JLT, BPF_JLE, BPF_JSLT, BPF_JSLE };
	int at = n;
	uint8_t cls = rn(3) == 0 ? BPF_JMP32 : BPF_JMP;
	if (rn(2))
		emit(INSN(cls | ops[rn(11)] | BPF_K, val_reg(), 0, 0, rimm()));
	else
		emit(INSN(cls | ops[rn(11)] | BPF_X, val_reg(), val_reg(), 0, 0));
	int k = 1 + (int)rn(3);
	for (int i = 0; i < k; i++)
		gen_simple();
	if (at < n)
		prog[at].off = (int16_t)(n - at - 1);
}
static void gen_loop(void)
{
	if (in_loop)
		return;
	if (rn(4) == 0)
		emit(LDX(BPF_W, 9, 6, (int16_t)(24 + 4 * rn(6))));
	else
		emit(MOV64_IMM(9, (int32_t)(1 + rn(20))));
	if (rn(4) == 0)
		emit(ALU64_IMM(BPF_AND, 9, 15));
	int head = n;
	in_loop = true;
	int k = 1 + (int)rn(3);
	for (int i = 0; i < k; i++)
		gen_simple();
	in_loop = false;
	emit(ALU64_IMM(BPF_ADD, 9, -1));
	emit(JMP_IMM(rn(2) ? BPF_JNE : BPF_JSGT, 9, 0, (int16_t)(head - n - 1)));
}
/* Counted loops as compilers emit them, for loop widening (verifier_widen.c): a counter in
 * r9 or in a 4-byte stack slot stepping up or down, tested at the back edge against a
 * constant (64- or 32-bit, signed or unsigned), the body indexing global data with it;
 * sometimes one path through the body resets, skips, scrambles or wraps the counter, or
 * the step is 0 (infinite: must be rejected, or accepted only if it provably ends). */
static bool ptr_loop_emitted; /* this program has a stepping pointer (counted when accepted) */
static void gen_counted_loop(void)
{
	if (in_loop)
		return;
	bool slot = rn(2), down = rn(3) == 0, j32 = rn(3) == 0, ptr = rn(2) == 0;
	/* up to 3,000 iterations: longer than walking allows with a short budget */
	int32_t bound = 1 + (int32_t)rn(rn(4) ? 40 : rn(2) ? 70 : 3000);
	/* p[0] read, then p += stride: with the counter's step or a multiple of it (widened
	 * with it, verifier_widen_ptr.c), or by another amount (walked); sometimes stepping
	 * twice on one path, or off either end of .data's 64 bytes (rejected) */
	static const int32_t strides[] = { 1, 2, 4, 3, -1, 8 };
	int32_t stride = strides[rn(6)], base = (int32_t)rn(8);
	if (ptr && rn(4)) /* mostly within the 64 bytes */
		bound = 1 + (int32_t)rn((uint32_t)((56 - base) / (stride < 0 ? 1 : stride)));
	emit(MOV64_IMM(9, down ? bound + (int32_t)rn(3) : (int32_t)rn(3)));
	if (slot)
		emit(STX(BPF_W, 10, 9, -4));
	if (ptr) { /* a pointer into .data spilled at fp-56, stepping with the counter */
		emit2(LD_MAP_VALUE(1, M_DATA, base));
		emit(STX(BPF_DW, 10, 1, -56));
		ptr_loop_emitted = true;
	}
	int head = n;
	if (slot)
		emit(LDX(BPF_W, 9, 10, -4));
	in_loop = true;
	int k = (int)rn(ptr ? 2 : 3);
	for (int i = 0; i < k; i++)
		gen_simple();
	if (ptr) {
		emit(LDX(BPF_DW, 1, 10, -56));
		emit(LDX(rn(3) ? BPF_B : rsize(), val_reg(), 1, 0));
		emit(ALU64_IMM(BPF_ADD, 1, stride));
		if (rn(8) == 0) {
			emit(JMP_IMM(BPF_JEQ, val_reg(), rimm(), 1));
			emit(ALU64_IMM(BPF_ADD, 1, 1));
		}
		emit(STX(BPF_DW, 10, 1, -56));
	}
	switch (rn(6)) {
	case 0: /* data[i] */
		emit2(LD_MAP_VALUE(2, M_DATA, 0));
		emit(ALU64_REG(BPF_ADD, 2, 9));
		emit(LDX(BPF_B, val_reg(), 2, 0));
		break;
	case 1: { /* one path changes the counter */
		static const uint8_t ops[] = { BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JSLT, BPF_JSET };
		emit(JMP_IMM(ops[rn(5)], val_reg(), rimm(), 1));
		switch (rn(6)) {
		case 0: emit(MOV64_IMM(9, (int32_t)rn(3))); break;
		case 1: emit(ALU64_IMM(BPF_ADD, 9, (int32_t)rn(3) - 1)); break;
		case 2: emit(ALU64_IMM(BPF_MUL, 9, 1)); break;
		case 3: emit(ALU32_IMM(BPF_ADD, 9, -2)); break;
		case 4: emit(ALU64_REG(BPF_ADD, 9, val_reg())); break;
		default: emit(ALU64_IMM(BPF_AND, 9, 7)); break;
		}
		break;
	}
	default:
		break;
	}
	in_loop = false;
	int32_t step = rn(10) == 0 ? 0 : 1 + (int32_t)rn(2);
	emit(rn(4) == 0 ? ALU32_IMM(BPF_ADD, 9, down ? -step : step)
			: ALU64_IMM(BPF_ADD, 9, down ? -step : step));
	if (slot)
		emit(STX(BPF_W, 10, 9, -4));
	static const uint8_t up_ops[] = { BPF_JLT, BPF_JLE, BPF_JNE, BPF_JSLT, BPF_JSLE };
	static const uint8_t down_ops[] = { BPF_JGT, BPF_JGE, BPF_JNE, BPF_JSGT, BPF_JSGE };
	uint8_t op = down ? down_ops[rn(5)] : up_ops[rn(5)];
	/* counting down, sometimes to the wrap test `!= -1` (the step from 0 wraps: the
	 * congruent counter tag, verifier_widen.c) */
	int32_t imm = down ? (rn(4) ? (int32_t)rn(3) : -1) : bound;
	emit(INSN((j32 ? BPF_JMP32 : BPF_JMP) | op | BPF_K, 9, 0, (int16_t)(head - n - 1), imm));
}
static void gen_spill(void)
{
	int16_t off = (int16_t)(-8 * (3 + (int)rn(4)));
	emit(STX(BPF_DW, 10, rn(2) ? 6 : 0, off));
	emit(LDX(BPF_DW, val_reg(), 10, rn(4) ? off : stack_off()));
}
/* bpf-to-bpf call: r1 = a pointer (caller stack, context or a global), the callee reads and
 * writes through it at random offsets; patched to a function appended after main */
#define MAX_CALLS 8
static int call_sites[MAX_CALLS], ncalls;
static void gen_call(void)
{
	if (ncalls == MAX_CALLS)
		return;
	switch (rn(4)) {
	case 0: emit(MOV64_REG(1, 6)); break;
	case 1: emit2(LD_MAP_VALUE(1, M_DATA, 0)); break;
	default:
		emit(MOV64_REG(1, 10));
		emit(ALU64_IMM(BPF_ADD, 1, -8 * (int32_t)(1 + rn(8))));
	}
	if (rn(2))
		emit(MOV64_IMM(2, rimm()));
	call_sites[ncalls++] = n;
	emit(CALL_LOCAL(0));
	if (rn(3))
		emit(MOV64_REG(val_reg(), 0));
}
/* bpf_loop: nr_loops small (a constant or a register & 31), the callback's context a
 * caller stack slot, global data or NULL; flags rarely not 0. The callback is appended after
 * main like a callee (call_loop[] marks which). */
static bool call_loop[MAX_CALLS];
static void gen_bpf_loop(void)
{
	if (ncalls == MAX_CALLS)
		return;
	if (rn(2)) {
		emit(MOV64_IMM(1, (int32_t)rn(24)));
	} else {
		emit(MOV64_REG(1, val_reg()));
		emit(ALU64_IMM(BPF_AND, 1, 31));
	}
	call_loop[ncalls] = true;
	call_sites[ncalls++] = n;
	emit2(INSN(BPF_LDDW, 2, BPF_PSEUDO_FUNC, 0, 0), INSN(0, 0, 0, 0, 0));
	switch (rn(4)) {
	case 0: emit(MOV64_IMM(3, 0)); break;
	case 1: emit2(LD_MAP_VALUE(3, M_DATA, 0)); break;
	default:
		emit(MOV64_REG(3, 10));
		emit(ALU64_IMM(BPF_ADD, 3, -8 * (int32_t)(1 + rn(8))));
	}
	emit(MOV64_IMM(4, rn(16) ? 0 : 1));
	emit(CALL(NB_HELPER_LOOP));
	if (rn(2))
		emit(MOV64_REG(val_reg(), 0));
}
/* callback(r1 = index, r2 = context): reads and writes through r2 (the index, a constant,
 * a loaded value), returns 0/1 from the index or a loaded value, sometimes something else */
static void gen_loop_callee(void)
{
	int k = 1 + (int)rn(4);
	for (int i = 0; i < k; i++) {
		int16_t off = (int16_t)(rn(10) == 0 ? (int)rn(24) - 8 : (int)(rn(2) * 8));
		switch (rn(5)) {
		case 0: emit(STX(BPF_DW, 2, rn(4) ? 1 : 3, off)); break;
		case 1: emit(ST(rsize(), 2, off, rimm())); break;
		case 2: emit(ALU64_IMM(BPF_ADD, 3, rimm())); break;
		default: emit(LDX(rsize(), 3, 2, off)); break;
		}
	}
	switch (rn(6)) {
	case 0: emit(MOV64_IMM(0, rimm())); break;
	case 1: emit(MOV64_REG(0, 3)); emit(ALU64_IMM(BPF_AND, 0, 1)); break;
	case 2: emit(MOV64_IMM(0, 0)); emit(JMP_IMM(BPF_JLT, 1, (int32_t)rn(16), 1)); emit(MOV64_IMM(0, 1)); break;
	default: emit(MOV64_IMM(0, (int32_t)rn(2))); break;
	}
	emit(EXIT());
}
static void gen_callee(void)
{
	int k = 1 + (int)rn(3);
	for (int i = 0; i < k; i++) {
		int16_t off = (int16_t)(rn(10) == 0 ? (int)rn(24) - 8 : (int)(rn(2) * 8));
		switch (rn(4)) {
		case 0: emit(STX(BPF_DW, 1, rn(6) ? 2 : 10, off)); break;
		case 1: emit(ST(rsize(), 1, off, rimm())); break;
		default: emit(LDX(rsize(), rn(2) ? 0 : 2, 1, off)); break;
		}
	}
	if (rn(6))
		emit(rn(2) ? MOV64_IMM(0, rimm()) : MOV64_REG(0, rn(2) ? 2 : 1));
	emit(EXIT());
}
static void gen_simple(void)
{
	switch (rn(11)) {
	case 0: case 1: gen_ctx_load(); break;
	case 9: gen_stack_var(); break;
	case 2: gen_ctx_store(); break;
	case 3: gen_stack_store(); break;
	case 4: gen_stack_load(); break;
	case 5: case 6: gen_alu(); break;
	case 7: gen_lookup(); break;
	case 8: gen_global(); break;
	default: gen_spill(); break;
	}
}
static void generate(void)
{
	n = 0;
	ncalls = 0;
	in_loop = false;
	stack_var_emitted = false;
	ptr_loop_emitted = false;
	emit(MOV64_REG(6, 1));
	for (int r = 0; r <= 9; r++)
		if (r != 1 && r != 6 && rn(12))
			emit(MOV64_IMM(r, rimm()));
	for (int k = 1; k <= 8; k++)
		if (rn(6))
			emit(ST(BPF_DW, 10, (int16_t)(-8 * k), rimm()));
	int k = 2 + (int)rn(12);
	for (int i = 0; i < k && n < MAXI - 60; i++) {
		switch (rn(12)) {
		case 0: gen_branch(); break;
		case 1: if (rn(2)) gen_loop(); else gen_counted_loop(); break;
		case 2: gen_helper(); break;
		case 3: if (rn(3)) gen_call(); else gen_bpf_loop(); break;
		default: gen_simple(); break;
		}
	}
	emit(rn(4) ? MOV64_IMM(0, rimm()) : MOV64_REG(0, val_reg()));
	emit(EXIT());
	for (int c = 0; c < ncalls && n < MAXI - 8; c++) {
		prog[call_sites[c]].imm = n - call_sites[c] - 1;
		if (call_loop[c])
			gen_loop_callee();
		else
			gen_callee();
	}
	if (n >= MAXI - 8) /* no room left for a callee: drop the calls' programs */
		for (int c = 0; c < ncalls; c++)
			prog[call_sites[c]] = MOV64_IMM(0, 0);
	memset(call_loop, 0, sizeof(call_loop));
	/* a quarter of the programs get a few random field mutations (robustness against
	 * malformed input, and odd encodings that still pass) */
	if (rn(4) == 0) {
		int k = 1 + (int)rn(3);
		for (int i = 0; i < k; i++) {
			struct bpf_insn *in = &prog[rn((unsigned)n)];
			switch (rn(5)) {
			case 0: in->code = (uint8_t)rnd(); break;
			case 1: in->dst_reg = (uint8_t)rn(16); break;
			case 2: in->src_reg = (uint8_t)rn(16); break;
			case 3: in->off = (int16_t)(rn(2) ? (int)rn(16) - 8 : (int)rnd()); break;
			default: in->imm = rn(2) ? (int32_t)rn(16) - 8 : (int32_t)rnd(); break;
			}
		}
	}
}

/* ---- running ---- */
static vm_helper_fn helper_fns[NB_HELPER_MAX];
static const struct nb_helper_proto *helper_protos[NB_HELPER_MAX];
static uint64_t runs, violations;

static void randomize_maps(void)
{
	for (uint32_t k = 0; k < 3; k++) {
		uint8_t v[128];
		for (size_t i = 0; i < sizeof(v); i++)
			v[i] = (uint8_t)(rn(3) ? rn(80) : rnd());
		map_update(maps[M_ARR], &k, v, NB_ANY);
	}
	for (uint64_t k = 0; k < 10; k++) {
		if (rn(2)) {
			uint64_t v[2] = { rnd(), rn(100) };
			map_update(maps[M_STATS], &k, v, NB_ANY);
		} else {
			map_delete(maps[M_STATS], &k);
		}
	}
	uint8_t *d = map_array_base(maps[M_DATA]);
	for (int i = 0; i < 64; i++)
		d[i] = (uint8_t)rnd();
}

/* Map pseudo LDDWs replaced by the addresses of the test's maps. */
static struct vm_program link_program(const struct nb_program *p)
{
	static struct bpf_insn linked[MAXI];
	memcpy(linked, p->insns, p->insn_cnt * sizeof(linked[0]));
	for (size_t i = 0; i + 1 < p->insn_cnt; i++) {
		if (linked[i].code != BPF_LDDW)
			continue;
		uint64_t addr = 0;
		if (linked[i].src_reg == BPF_PSEUDO_MAP_FD)
			addr = (uint64_t)(uintptr_t)maps[linked[i].imm];
		else if (linked[i].src_reg == BPF_PSEUDO_MAP_VALUE)
			addr = (uint64_t)(uintptr_t)map_array_base(maps[linked[i].imm]) +
			       (uint32_t)linked[i + 1].imm;
		else if (linked[i].src_reg == BPF_PSEUDO_FUNC) { /* absolute index (vm.h) */
			linked[i].imm = (int32_t)(i + 1 + (size_t)(int64_t)linked[i].imm);
			i++;
			continue;
		} else {
			i++;
			continue;
		}
		linked[i].src_reg = 0;
		linked[i].imm = (int32_t)(uint32_t)addr;
		linked[i + 1].imm = (int32_t)(uint32_t)(addr >> 32);
		i++;
	}
	struct vm_program vp = { .insns = linked, .insn_cnt = p->insn_cnt, .helpers = helper_fns,
				 .helper_protos = helper_protos };
	return vp;
}

static void random_ctx(uint8_t *ctx, size_t len)
{
	for (size_t i = 0; i < len; i++)
		ctx[i] = (uint8_t)rnd();
	for (int i = 0; i < 40; i++) /* many small values: loop bounds, indexes */
		if (rn(2))
			memset(ctx + 4 * i + 1, 0, 3), ctx[4 * i] = (uint8_t)rn(70);
}

static uint64_t last_executed; /* instructions the last exec_checked ran */

/* One run in the checked interpreter, every context field and direct map value a region
 * of its permission. */
static int exec_checked(const struct vm_program *vp, const struct nb_hook_desc *hook,
			uint8_t *ctx, struct vm_fault *fault)
{
	struct vm_checked chk = { .insn_budget = 10000000 };
	for (size_t f = 0; f < hook->field_cnt;) {
		size_t g = f + 1; /* fields are sorted by offset: extend while adjacent */
		while (g < hook->field_cnt &&
		       hook->fields[g].off == hook->fields[g - 1].off + hook->fields[g - 1].size &&
		       hook->fields[g].writable == hook->fields[f].writable &&
		       hook->fields[g].readable == hook->fields[f].readable)
			g++;
		uint32_t end = hook->fields[g - 1].off + hook->fields[g - 1].size;
		vm_checked_add_region(&chk, (uint64_t)(uintptr_t)ctx + hook->fields[f].off,
				      end - hook->fields[f].off, hook->fields[f].writable,
				      hook->fields[f].name);
		f = g;
	}
	/* value 0 of every array map: what a direct value address (lddw) points to */
	for (int m = M_ARR; m <= M_RODATA; m++)
		vm_checked_add_region(&chk, (uint64_t)(uintptr_t)map_array_base(maps[m]),
				      defs[m].value_size, m != M_RODATA, defs[m].name);
	uint64_t r0 = 0;
	memset(fault, 0, sizeof(*fault));
	map_epoch_enter();
	int rc = vm_interp_run(vp, (uint64_t)(uintptr_t)ctx, 0, &r0, &chk, fault);
	map_epoch_exit();
	last_executed = chk.insns_executed;
	runs++;
	return rc;
}

static void print_program(const struct nb_program *p)
{
	char line[128];
	for (size_t i = 0; i < p->insn_cnt; i++) {
		if (isa_disasm_insn(p->insns, p->insn_cnt, i, line, sizeof(line)) < 0)
			snprintf(line, sizeof(line), "?");
		fprintf(stderr, "  %3zu: %s\n", i, line);
	}
}

/* Every run of an accepted program executes at most the verifier's static bound
 * (stats.max_insns, verifier_cost.c): loops walked or widened, bpf_loop x nr_loops x the
 * callback. The checked interpreter counts every instruction, callbacks included. */
#define VERIFY_BUDGET 20000
static uint64_t runtime_violations, max_executed, max_bound, bpf_loop_runs;
static double tightest = 0; /* max over runs of executed / bound */
static bool calls_bpf_loop(const struct nb_program *p)
{
	for (size_t i = 0; i < p->insn_cnt; i++)
		if (p->insns[i].code == (BPF_JMP | BPF_CALL) && p->insns[i].src_reg == 0 &&
		    p->insns[i].imm == NB_HELPER_LOOP)
			return true;
	return false;
}
static void run_program(const struct nb_program *p, const struct nb_hook_desc *hook, int reps,
			uint64_t bound)
{
	struct vm_program vp = link_program(p);
	bool loops = calls_bpf_loop(p);
	if (bound > max_bound)
		max_bound = bound;
	for (int r = 0; r < reps; r++) {
		_Alignas(8) uint8_t ctx[256];
		random_ctx(ctx, sizeof(ctx));
		if (rn(4) == 0)
			randomize_maps();
		struct vm_fault fault;
		int rc = exec_checked(&vp, hook, ctx, &fault);
		if (last_executed > max_executed)
			max_executed = last_executed;
		if (loops)
			bpf_loop_runs++;
		if (bound && (double)last_executed / (double)bound > tightest)
			tightest = (double)last_executed / (double)bound;
		if (rc == 0 && last_executed > bound) {
			if (++runtime_violations <= 3) {
				fprintf(stderr, "RUN TIME: accepted program executed %llu instructions, "
					"more than its static bound max_insns %llu\n",
					(unsigned long long)last_executed, (unsigned long long)bound);
				print_program(p);
			}
			return;
		}
		if (rc != 0) {
			violations++;
			if (violations <= 5) {
				fprintf(stderr, "VIOLATION: accepted program faulted: %s\n", fault.msg);
				print_program(p);
			}
			return;
		}
	}
}

/* Non-interference of the rank-variance check: a program accepted with it decides the
 * same outputs (algo, proto, n_channels) whatever the rank-local inputs are: the
 * rank-local context fields (reg_buff, max_channels), writable map contents, timers and
 * random numbers all change between runs; rank-invariant fields and .rodata do not. */
static uint64_t invariance_runs, invariance_violations;
static void check_rank_invariance(const struct nb_program *p, const struct nb_hook_desc *hook,
				  int reps)
{
	struct vm_program vp = link_program(p);
	_Alignas(8) uint8_t base[256], ctx[256], first[12];
	random_ctx(base, sizeof(base));
	for (int r = 0; r < reps; r++) {
		memcpy(ctx, base, sizeof(ctx));
		for (size_t f = 0; f < hook->field_cnt; f++)
			if (hook->fields[f].variance == NB_RANK_LOCAL)
				for (uint32_t b = 0; b < hook->fields[f].size; b++)
					ctx[hook->fields[f].off + b] = (uint8_t)(rn(2) ? rn(70) : rnd());
		randomize_maps();
		struct vm_fault fault;
		if (exec_checked(&vp, hook, ctx, &fault) != 0)
			return; /* counted by run_program's check */
		invariance_runs++;
		if (r == 0) {
			memcpy(first, ctx + 140, sizeof(first));
		} else if (memcmp(first, ctx + 140, sizeof(first))) {
			if (++invariance_violations <= 3) {
				fprintf(stderr, "RANK VARIANCE: accepted program decided differently\n");
				print_program(p);
			}
			return;
		}
	}
}

int main(int argc, char **argv)
{
	long programs = argc > 1 ? atol(argv[1]) : 2000;
	int reps = argc > 2 ? atoi(argv[2]) : 20;
	rng = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x2545f4914f6cdd1dull;
	if (!rng)
		rng = 1;
	char err[256];
	for (int m = 0; m < M_COUNT; m++) {
		struct nb_map_spec spec = { defs[m].name, defs[m].type, defs[m].key_size,
					    defs[m].value_size, defs[m].max_entries, defs[m].map_flags };
		int rc = map_create(&spec, &maps[m], err, sizeof(err));
		CHECK(rc == 0);
		if (rc) {
			fprintf(stderr, "map_create: %s\n", err);
			TEST_DONE();
		}
	}
	const struct nb_hook_desc *hook = hook_desc(NB_HOOK_TUNER);
	helper_fns[1] = h_lookup;
	helper_fns[2] = h_update;
	helper_fns[3] = h_delete;
	helper_fns[5] = h_ktime;
	helper_fns[6] = h_printk;
	helper_fns[7] = h_prandom;
	helper_fns[NB_HELPER_LOOP] = vm_helper_bpf_loop;
	for (int id = 0; id < NB_HELPER_MAX; id++)
		helper_protos[id] = hook_helper(hook, id);
	randomize_maps();

	uint64_t accepted = 0, codes[NB_VERR_COUNT] = { 0 }, strict_rank_local = 0;
	uint64_t accepted_loops = 0; /* accepted programs calling bpf_loop */
	uint64_t widened = 0;        /* accepted programs with a loop verified by widening */
	uint64_t ptr_widened = 0;    /* of those, with a pointer stepping in a counted loop */
	uint64_t stack_var = 0;      /* accepted programs with a variable-offset stack access */
	uint64_t widened_only = 0;   /* of those, walking runs out of budget */
	clock_t t0 = clock();
	for (long i = 0; i < programs; i++) {
		generate();
		struct nb_program p = { .name = "rand", .insns = prog, .insn_cnt = (size_t)n,
					.main_insn_cnt = (size_t)n };
		/* random programs write outputs from random data: safety is checked with the
		 * rank-variance rule off; the strict run must only add E-RANK-LOCAL rejections
		 * (or run out of budget, as it prunes less) */
		struct nb_verifier_opts opts = { .budget = VERIFY_BUDGET, .allow_rank_local = true };
		struct nb_verifier_opts strict = { .budget = VERIFY_BUDGET };
		struct nb_verifier_diag diag, sdiag;
		struct nb_verifier_stats vst = { 0 };
		int rc = verifier_check(&p, defs, M_COUNT, hook, &opts, &diag, &vst);
		int src = verifier_check(&p, defs, M_COUNT, hook, &strict, &sdiag, NULL);
		if (src == -13 && sdiag.code == NB_VERR_RANK_LOCAL)
			strict_rank_local++;
		if (src == 0 && rc != 0) {
			CHECK(rc == 0); /* strict accepted what the relaxed check rejects */
			fprintf(stderr, "strict accepted, relaxed rejected: %s\n", diag.msg);
		}
		if (rc == 0 && src != 0 &&
		    !(src == -13 && (sdiag.code == NB_VERR_RANK_LOCAL || sdiag.code == NB_VERR_BUDGET))) {
			CHECK(src == 0);
			fprintf(stderr, "relaxed accepted, strict rejected with %s: %s\n",
				verifier_err_code(sdiag.code), sdiag.msg);
		}
		if (vst.loops_widened || vst.runs > 1) {
			/* widening only adds loops too long to walk: any other verdict is walking's */
			struct nb_verifier_opts walk = opts;
			struct nb_verifier_diag wdiag;
			walk.no_widen = true;
			int wrc = verifier_check(&p, defs, M_COUNT, hook, &walk, &wdiag, NULL);
			bool same = wrc == rc && (rc == 0 || (wdiag.code == diag.code &&
							      wdiag.insn == diag.insn));
			/* ... or proves a loop too long to walk over the cost limit (E-COST) */
			bool longer = wrc == -13 && wdiag.code == NB_VERR_BUDGET &&
				      (rc == 0 || (rc == -13 && diag.code == NB_VERR_COST));
			if (!same && !longer) {
				CHECK(same);
				fprintf(stderr, "widening changed the verdict: %d %s / walking %d %s\n", rc,
					rc ? verifier_err_code(diag.code) : "", wrc,
					wrc ? verifier_err_code(wdiag.code) : "");
				print_program(&p);
			}
			if (rc == 0 && wrc != 0)
				widened_only++;
		}
		if (rc == 0) {
			accepted++;
			if (vst.loops_widened)
				widened++;
			if (vst.loops_widened && ptr_loop_emitted)
				ptr_widened++;
			if (stack_var_emitted)
				stack_var++;
			for (size_t i = 0; i < p.insn_cnt; i++)
				if (p.insns[i].code == (BPF_JMP | BPF_CALL) && p.insns[i].src_reg == 0 &&
				    p.insns[i].imm == NB_HELPER_LOOP) {
					accepted_loops++;
					break;
				}
			run_program(&p, hook, reps, vst.max_insns);
			if (src == 0)
				check_rank_invariance(&p, hook, reps);
		} else if (rc == -13) {
			codes[diag.code]++;
		} else {
			CHECK(rc == -13);
		}
	}
	printf("soundness: %ld programs generated, %llu accepted, %llu executions, %llu violations "
	       "(%.1f s)\n", programs, (unsigned long long)accepted, (unsigned long long)runs,
	       (unsigned long long)violations, (double)(clock() - t0) / CLOCKS_PER_SEC);
	printf("bpf_loop: %llu accepted programs call it\n", (unsigned long long)accepted_loops);
	printf("loop widening: %llu accepted programs verified with a widened loop (%llu that "
	       "walking rejects with E-BUDGET)\n",
	       (unsigned long long)widened, (unsigned long long)widened_only);
	printf("stepping pointers: %llu accepted programs with a widened loop and a map value "
	       "pointer stepping in a counted loop\n", (unsigned long long)ptr_widened);
	if (programs >= 1000)
		CHECK(ptr_widened > 0); /* the generator must keep reaching them */
	printf("variable stack offsets: %llu accepted programs index the stack by a masked "
	       "number (buf[i & m])\n", (unsigned long long)stack_var);
	if (programs >= 1000)
		CHECK(stack_var > 0); /* the generator must keep reaching them */
	printf("cost bound: max %llu instructions executed in one run (largest bound %llu, "
	       "tightest run %.2f of its bound, %llu runs calling bpf_loop); %llu runs over "
	       "their program's max_insns\n",
	       (unsigned long long)max_executed, (unsigned long long)max_bound, tightest,
	       (unsigned long long)bpf_loop_runs, (unsigned long long)runtime_violations);
	CHECK(runtime_violations == 0);
	printf("strict rank variance: %llu programs rejected with E-RANK-LOCAL; %llu runs of the "
	       "others with changed rank-local inputs, %llu decided differently\n",
	       (unsigned long long)strict_rank_local, (unsigned long long)invariance_runs,
	       (unsigned long long)invariance_violations);
	CHECK(invariance_violations == 0);
	printf("rejections:");
	for (int c = 1; c < NB_VERR_COUNT; c++)
		if (codes[c])
			printf(" %s=%llu", verifier_err_code((enum nb_verr)c), (unsigned long long)codes[c]);
	printf("\n");
	CHECK(violations == 0);
	CHECK(accepted * 20 >= (uint64_t)programs); /* the generator must exercise acceptance */
	for (int m = 0; m < M_COUNT; m++)
		map_free(maps[m]);
	TEST_DONE();
}

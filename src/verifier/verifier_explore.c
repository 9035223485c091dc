/* Path exploration: executes the program over abstract states, forking at conditional
 * jumps, pruning at prune points against fully explored states that contain the current
 * one, and reporting exact repeats at a loop head as infinite loops.
 *
 * Design decisions (see also verifier_state.c for precision):
 *  - prune points are jump targets and call return sites; a state is stored there unless
 *    one was stored less than MIN_INSNS_BETWEEN_STATES instructions ago on this path
 *    (loop heads always store). A new state is pruned only against stored states whose
 *    exploration is complete; states still being explored (earlier iterations of the loop
 *    being simulated) are only compared for exact equality: a repeat means the loop can
 *    never leave, reported as E-INFINITE-LOOP at the back-edge jump (the loop condition in
 *    C) with the loop head named in the message. Loops are otherwise simulated iteration
 *    by iteration under the processed-instruction budget (E-BUDGET, same reporting).
 *  - strict on purpose: pointer comparisons never narrowing, unreachable code, and helper
 *    buffers that are not fully initialised are rejected; a divisor that may be zero is
 *    accepted (the ISA defines the result) with a warning.
 *  - memory per run is bounded: at most MAX_RECORDS_PER_INSN stored states per insn (stale
 *    ones evicted after repeated misses), VERIFIER_MAX_RECORDS in all, and
 *    VERIFIER_MAX_PENDING branches waiting.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "verifier/verifier_internal.h"

#define PTR_OFF_LIMIT (1 << 29)
#define MAX_RECORDS_PER_INSN 1024
#define MIN_INSNS_BETWEEN_STATES 4
#define LOOP_DENSE_STATES 8
#define LOOP_SPARSE_INSNS 64

static bool is_ptr(const struct vreg *r)
{
	return r->type != VT_SCALAR && r->type != VT_NOT_INIT;
}

/* ---- ALU ---- */

static int ptr_add(struct verifier_env *env, struct vreg *p, const struct vreg *s, bool sub,
		   unsigned regno)
{
	size_t pc = env->pc;
	char d[128];
	if (p->type == VT_CONST_MAP_PTR || p->type == VT_PTR_FUNC) {
		vreg_describe(env, p, d, sizeof(d));
		return verr(env, NB_VERR_POINTER_ARITH, pc, "arithmetic on r%u, which is %s", regno, d);
	}
	vreg_mark_precise(env, s);
	p->taint = vtaint_join(p->taint, s->taint); /* where it points is rank-local */
	if (sc_is_const(&s->s)) {
		int64_t c = (int64_t)s->s.t.value, off;
		if ((c < -PTR_OFF_LIMIT || c > PTR_OFF_LIMIT ||
		     (off = sub ? (int64_t)p->off - c : (int64_t)p->off + c) < -PTR_OFF_LIMIT ||
		     off > PTR_OFF_LIMIT) &&
		    (vreg_describe(env, p, d, sizeof(d)), true))
			return verr(env, NB_VERR_POINTER_ARITH, pc,
				    "adding %lld to r%u (%s) moves it far out of its object", (long long)c,
				    regno, d);
		p->off = (int32_t)off;
		return 0;
	}
	switch (p->type) {
	case VT_PTR_MAP_VALUE:
	case VT_PTR_STACK: { /* bounds are checked at each access (verifier_mem.c) */
		struct vscalar v = p->s;
		sc_alu(&v, &s->s, sub ? BPF_SUB : BPF_ADD, false, 0);
		p->s = v;
		if (vwiden_id(p->id)) /* no longer the loop's pointer plus a constant */
			p->id = 0;
		return 0;
	}
	default:
		vreg_describe(env, p, d, sizeof(d));
		return verr(env, NB_VERR_POINTER_ARITH, pc,
			    "variable offset added to r%u (%s); only map value and stack pointers may "
			    "be indexed by a variable",
			    regno, d);
	}
}

/* Loop counter tag after dst = dst OP src (verifier_widen.c): kept by adding a constant;
 * exact ("head value + lc_off") while the add provably does not wrap, congruent modulo 2^32
 * (VLC_MOD) after one that may: every add, 32- or 64-bit, keeps a congruence mod 2^32. */
static void lc_update(const struct vstate *st, struct vreg *dst, const struct vscalar *before,
		      const struct vreg *src, uint8_t op, bool alu32)
{
	if (!dst->lc)
		return;
	int64_t c = 0;
	bool ok = (op == BPF_ADD || op == BPF_SUB) && src->type == VT_SCALAR &&
		  sc_is_const(&src->s);
	if (ok) {
		uint64_t v = src->s.t.value;
		c = alu32 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
		ok = c >= -(1 << 30) && c <= (1 << 30);
		if (op == BPF_SUB)
			c = -c;
	}
	const uint64_t lim = alu32 ? UINT32_MAX : UINT64_MAX;
	if (ok && !(before->umax <= lim && (c >= 0 ? before->umax <= lim - (uint64_t)c
						   : before->umin >= (uint64_t)-c))) {
		/* may have wrapped: congruent, if that can prove progress at all (a tag also
		 * keeps states from pruning each other: a useless one only costs) */
		ok = vwiden_lc_mod_useful(st, dst->lc);
		dst->lc |= VLC_MOD;
	}
	int64_t off = (int64_t)dst->lc_off + c;
	if (ok && off >= -(1 << 30) && off <= (1 << 30)) {
		dst->lc_off = (int32_t)off;
		return;
	}
	dst->lc = 0;
	dst->lc_off = 0;
}

/* `rD = rS; rD <<= 32; rD >>= 32` (the zero-extended copy of a 32-bit counter that
 * clang emits at -mcpu=v1/v2) ending at pc: the source register, or -1. Only straight
 * code: no jump or call lands on the shifts, so every path to pc ran the copy, and rS is
 * unchanged since (only rD is written). */
static int zext_copy_src(const struct verifier_env *env, size_t pc)
{
	if (pc < 2 || (env->insn_flags[pc] & (VF_PRUNE | VF_SUBPROG | VF_LDDW2)) ||
	    (env->insn_flags[pc - 1] & (VF_PRUNE | VF_SUBPROG | VF_LDDW2)) ||
	    (env->insn_flags[pc - 2] & VF_LDDW2))
		return -1;
	const struct bpf_insn *rsh = &env->insns[pc], *lsh = rsh - 1, *mov = rsh - 2;
	unsigned d = rsh->dst_reg;
	if (rsh->code != (BPF_ALU64 | BPF_RSH | BPF_K) || rsh->imm != 32 || rsh->off ||
	    lsh->code != (BPF_ALU64 | BPF_LSH | BPF_K) || lsh->imm != 32 || lsh->off ||
	    lsh->dst_reg != d || mov->code != (BPF_ALU64 | BPF_MOV | BPF_X) || mov->off ||
	    mov->dst_reg != d || mov->src_reg == d || mov->src_reg == BPF_REG_FP)
		return -1;
	return mov->src_reg;
}

/* dst = src as the same number: copies share an id (a range check on one narrows both)
 * and the loop counter tag. */
static void copy_linked(struct verifier_env *env, struct vreg *dst, unsigned src_reg)
{
	struct vreg *s = vcur_reg(env, src_reg);
	if (s->type == VT_SCALAR && !sc_is_const(&s->s) && s->id == 0)
		s->id = ++env->next_id;
	*dst = *s;
}

static int do_alu(struct verifier_env *env, const struct bpf_insn *in)
{
	size_t pc = env->pc;
	uint8_t op = BPF_OP(in->code);
	bool alu32 = BPF_CLASS(in->code) == BPF_ALU, x = BPF_SRC(in->code) == BPF_X;
	struct vreg *dst = vcur_reg(env, in->dst_reg);
	struct vreg src;
	char d[128];

	if (x) {
		src = *vcur_reg(env, in->src_reg);
		if (src.type == VT_NOT_INIT)
			return verr(env, NB_VERR_UNINIT_REG, pc, "r%u is read but was never set",
				    in->src_reg);
	} else {
		vreg_set_const(&src, alu32 ? (uint64_t)(uint32_t)in->imm : (uint64_t)(int64_t)in->imm);
	}
	if (op == BPF_MOV) {
		/* a 32-bit move of a number below 2^32 copies it unchanged (the v1/v2 loop
		 * counter compared through `w1 = w6`): keep the link */
		if (x && in->off == 0 &&
		    (!alu32 || (src.type == VT_SCALAR && src.s.umax <= UINT32_MAX))) {
			copy_linked(env, dst, in->src_reg);
			return 0;
		}
		if (is_ptr(&src))
			return verr(env, src.type == VT_PTR_MAP_VALUE_OR_NULL ? NB_VERR_NULL_ARITH
									      : NB_VERR_POINTER_ARITH,
				    pc, "%s move of pointer r%u truncates it",
				    alu32 ? "32-bit" : "sign-extending", in->src_reg);
		struct vscalar s = src.s;
		sc_alu(&s, &src.s, BPF_MOV, alu32, x ? in->off : 0);
		struct vorig org = src.org;
		vreg_set_scalar(dst, &s);
		dst->org = org;
		dst->taint = src.taint;
		return 0;
	}
	if (dst->type == VT_NOT_INIT)
		return verr(env, NB_VERR_UNINIT_REG, pc, "r%u is read but was never set", in->dst_reg);
	if (op == BPF_END) {
		if (is_ptr(dst))
			return verr(env, NB_VERR_POINTER_ARITH, pc, "byte swap of pointer r%u",
				    in->dst_reg);
		sc_end(&dst->s, (unsigned)in->imm, !alu32 || BPF_SRC(in->code) == BPF_TO_BE);
		dst->id = 0;
		dst->lc = 0;
		dst->lc_off = 0;
		return 0;
	}
	if (is_ptr(dst) || is_ptr(&src)) {
		bool dnull = dst->type == VT_PTR_MAP_VALUE_OR_NULL, snull = src.type == VT_PTR_MAP_VALUE_OR_NULL;
		if (dnull || snull)
			return verr(env, NB_VERR_NULL_ARITH, pc,
				    "arithmetic on r%u, a map lookup result that may be NULL; check it "
				    "against NULL first",
				    dnull ? in->dst_reg : in->src_reg);
		if (!alu32 && op == BPF_ADD && is_ptr(dst) && !is_ptr(&src))
			return ptr_add(env, dst, &src, false, in->dst_reg);
		if (!alu32 && op == BPF_SUB && is_ptr(dst) && !is_ptr(&src))
			return ptr_add(env, dst, &src, true, in->dst_reg);
		if (!alu32 && op == BPF_ADD && !is_ptr(dst) && is_ptr(&src)) {
			struct vreg p = src, s = *dst;
			int err = ptr_add(env, &p, &s, false, in->src_reg);
			if (!err)
				*dst = p;
			return err;
		}
		vreg_describe(env, is_ptr(dst) ? dst : &src, d, sizeof(d));
		return verr(env, NB_VERR_POINTER_ARITH, pc,
			    "this operation on %s is not allowed; pointers only support adding or "
			    "subtracting a number (64-bit)",
			    d);
	}
	if (op == BPF_DIV || op == BPF_MOD) {
		/* Defined by the ISA (RFC 9669) and accepted as Linux does: x / 0 = 0, x % 0 = x
		 * (scalar_bounds.c models it; the interpreters and the JIT implement it). A
		 * divisor that may be zero is most likely a missing check: say so once. */
		const char *what = op == BPF_DIV ? "the quotient is then 0"
						 : "the remainder is then the dividend";
		if (!x && in->imm == 0)
			vwarn(env, NB_VERR_DIV_ZERO, pc, "%s by the constant 0: %s",
			      op == BPF_DIV ? "division" : "modulo", what);
		if (x) {
			bool zero = alu32 ? src.s.u32min == 0 : src.s.umin == 0;
			bool always = alu32 ? src.s.u32max == 0 : src.s.umax == 0;
			if (always)
				vwarn(env, NB_VERR_DIV_ZERO, pc, "divisor r%u is 0 on some path: %s",
				      in->src_reg, what);
			else if (zero)
				vwarn(env, NB_VERR_DIV_ZERO, pc,
				      "divisor r%u may be zero (%s range [%llu, %llu]): %s; check it "
				      "is non-zero if that is not intended",
				      in->src_reg, alu32 ? "32-bit" : "its",
				      (unsigned long long)(alu32 ? src.s.u32min : src.s.umin),
				      (unsigned long long)(alu32 ? src.s.u32max : src.s.umax), what);
			vreg_mark_precise(env, &src);
		}
	}
	int zs;
	if (op == BPF_RSH && !x && (zs = zext_copy_src(env, pc)) >= 0) {
		const struct vreg *z = vcur_reg(env, (unsigned)zs);
		if (z->type == VT_SCALAR && z->s.umax <= UINT32_MAX) {
			copy_linked(env, dst, (unsigned)zs); /* the shifts gave back rS itself */
			return 0;
		}
	}
	struct vscalar r = dst->s, before = dst->s;
	sc_alu(&r, &src.s, op, alu32, in->off);
	dst->s = r;
	dst->id = 0;
	lc_update(&env->cur, dst, &before, &src, op, alu32);
	dst->taint = vtaint_join(dst->taint, src.taint);
	dst->org.b[0] |= src.org.b[0];
	dst->org.b[1] |= src.org.b[1];
	return 0;
}

/* ---- conditional jumps ---- */

static void for_each_reg(struct vstate *st, void (*fn)(struct vreg *, void *), void *arg)
{
	for (uint32_t f = 0; f < st->nframes; f++) {
		struct vframe *fr = st->frames[f];
		for (int r = 0; r < BPF_NREGS; r++)
			fn(&fr->regs[r], arg);
		for (unsigned i = 0; i < fr->nslots; i++)
			if (slot_spilled(&fr->slots[i]))
				fn(&fr->slots[i].spill, arg);
	}
}

struct null_mark {
	uint32_t id;
	bool is_null;
};

static void null_mark_fn(struct vreg *r, void *arg)
{
	struct null_mark *m = arg;
	if (r->type != VT_PTR_MAP_VALUE_OR_NULL || r->id != m->id)
		return;
	if (m->is_null) {
		vreg_set_const(r, 0);
	} else {
		r->type = VT_PTR_MAP_VALUE; /* keeps the id: it names the element (same_object) */
	}
}

/* A narrowed scalar and its linked copies: all get the new range, and all get the union
 * of their origins (the range of each now depends on every one of them, and on the other
 * operand of a register comparison). */
struct range_copy {
	uint32_t id;
	const struct vscalar *s;
	struct vorig org;
	bool apply;
};

static void range_copy_fn(struct vreg *r, void *arg)
{
	struct range_copy *c = arg;
	if (r->type != VT_SCALAR || r->id != c->id)
		return;
	if (c->apply) {
		r->s = *c->s;
		r->org = c->org;
	} else {
		c->org.b[0] |= r->org.b[0];
		c->org.b[1] |= r->org.b[1];
	}
}

/* Numbers with the same loop counter tag differ by exactly their tags' offsets (each is
 * the counter's head value plus its offset, without wrapping: verifier_widen.c), so a
 * test on one bounds the others: clang's rotated loops test `i - 1` or `i + 1` and step
 * another copy of i (tuned_rules_pick: `r0 = r5 - 1; if r0 > 30 goto out; ...
 * r0 = r5 + 1`). */
struct lc_narrow {
	uint16_t lc;
	int32_t off;
	struct vscalar s;
	struct vorig org;
};

static void lc_narrow_fn(struct vreg *x, void *arg)
{
	const struct lc_narrow *n = arg;
	if (x->type != VT_SCALAR || x->lc != n->lc) /* n->lc is exact: so is x's */
		return;
	int64_t d = (int64_t)x->lc_off - n->off; /* x = narrowed + d, |d| <= 2^31 */
	uint64_t lo, hi;
	if (d >= 0) {
		if (n->s.umin > UINT64_MAX - (uint64_t)d)
			return; /* no value of x fits: leave it (the edge is dead anyway) */
		lo = n->s.umin + (uint64_t)d;
		hi = n->s.umax > UINT64_MAX - (uint64_t)d ? UINT64_MAX : n->s.umax + (uint64_t)d;
	} else {
		uint64_t m = (uint64_t)-d;
		if (n->s.umax < m)
			return;
		lo = n->s.umin < m ? 0 : n->s.umin - m;
		hi = n->s.umax - m;
	}
	struct vscalar r = x->s;
	if (lo <= r.umin && hi >= r.umax)
		return; /* nothing new */
	r.umin = lo > r.umin ? lo : r.umin;
	r.umax = hi < r.umax ? hi : r.umax;
	if (r.umin > r.umax || !sc_sync(&r) || !sc_in(&x->s, &r))
		return;
	x->s = r;
	x->org.b[0] |= n->org.b[0];
	x->org.b[1] |= n->org.b[1];
}

static void set_scalar_edge(struct vstate *st, unsigned frame, unsigned regno,
			    const struct vscalar *s, struct vorig extra)
{
	struct vreg *r = &st->frames[frame]->regs[regno];
	r->s = *s;
	r->org.b[0] |= extra.b[0];
	r->org.b[1] |= extra.b[1];
	if (r->id) {
		struct range_copy c = { r->id, s, r->org, false };
		for_each_reg(st, range_copy_fn, &c);
		c.apply = true;
		for_each_reg(st, range_copy_fn, &c);
	}
	if (r->type == VT_SCALAR && r->lc && !(r->lc & VLC_MOD)) { /* exact tags only */
		struct lc_narrow n = { r->lc, r->lc_off, r->s, r->org };
		for_each_reg(st, lc_narrow_fn, &n);
	}
}

/* A test on a loop counter also bounds the pointers stepping with it (verifier_widen_ptr.c);
 * then the counter's range mattered. */
static void lc_ptr_edge(struct verifier_env *env, struct vstate *st, unsigned frame,
			unsigned regno)
{
	const struct vreg *r = &st->frames[frame]->regs[regno];
	if (r->type == VT_SCALAR && r->lc && st->widen && verifier_widen_narrow(st, r))
		vreg_mark_precise(env, r);
}

int verifier_push_pending(struct verifier_env *env, uint32_t pc, struct vstate *st)
{
	if (env->npending >= VERIFIER_MAX_PENDING)
		return verr(env, NB_VERR_BUDGET, env->pc,
			    "more than %d branches pending exploration; simplify the control flow",
			    VERIFIER_MAX_PENDING);
	if (env->npending == env->cap_pending) {
		size_t cap = env->cap_pending ? env->cap_pending * 2 : 64;
		struct vpending *n = realloc(env->pending, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		env->pending = n;
		env->cap_pending = cap;
	}
	vstate_share_slots(st); /* waiting: its stack may be a stored state's */
	env->pending[env->npending].st = *st;
	env->pending[env->npending].pc = pc;
	env->npending++;
	if (st->rec)
		st->rec->branches++;
	if (env->npending + 1 > env->stats.peak_states)
		env->stats.peak_states = env->npending + 1;
	return 0;
}

/* A pointer that cannot be 0 at run time, so a comparison with 0 has one outcome. Every
 * base is a real allocation (context, stack, map storage, map handle) far above the first
 * MiB of the address space, so base + offset cannot wrap to 0 while the offset stays within
 * +-1 MiB; an unbounded variable offset can. Raw conformance memory may be NULL unless the
 * program was verified for a non-empty buffer, which the runtime then enforces
 * (ncclbpf_program_run). Regression: these were all assumed non-NULL and the unexplored
 * "== 0" path still ran. */
static bool nonnull_ptr(const struct verifier_env *env, const struct vreg *r)
{
	const int64_t lim = 1 << 20;
	if (!is_ptr(r) || r->type == VT_PTR_MAP_VALUE_OR_NULL)
		return false;
	if (r->type == VT_CONST_MAP_PTR)
		return true;
	if ((r->type == VT_PTR_MEM || (r->type == VT_PTR_CTX && env->hook->ctx_is_raw_memory)) &&
	    env->mem_size == 0)
		return false;
	if (r->off < -lim || r->off > lim)
		return false;
	/* only map value and stack pointers carry a variable offset (ptr_add), in r->s */
	return (r->type != VT_PTR_MAP_VALUE && r->type != VT_PTR_STACK) ||
	       (r->s.smin >= -lim && r->s.smax <= lim);
}

/* Two pointers into the same object at run time, so that comparing them compares only
 * their offsets: the context, one stack frame, raw memory, or one map value (a map with a
 * single element, or two pointers from the same lookup). Anything else would let the
 * outcome depend on where the host placed the objects. */
static bool same_object(const struct verifier_env *env, const struct vreg *a,
			const struct vreg *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case VT_PTR_CTX:
	case VT_PTR_MEM:
		return true;
	case VT_PTR_STACK:
		return a->frameno == b->frameno;
	case VT_PTR_MAP_VALUE: {
		if (a->map != b->map)
			return false;
		const struct nb_map_def *m = &env->maps[a->map];
		bool single = (m->type == 2 /* ARRAY */ || m->type == 6 /* PERCPU_ARRAY */) &&
			      m->max_entries == 1;
		return single || (a->id && a->id == b->id);
	}
	default:
		return false;
	}
}

/* The offset of pointer r from its object's start (constant + variable part), or false
 * when it is not bounded well enough to compare (|offset| < 2^30 keeps base + offset from
 * wrapping, so the addresses compare like the offsets do, signed or unsigned). */
static bool ptr_offset(const struct vreg *r, struct vscalar *o)
{
	const int64_t lim = 1 << 30;
	struct vscalar c;
	sc_const(&c, (uint64_t)(int64_t)r->off);
	if (r->type == VT_PTR_MAP_VALUE || r->type == VT_PTR_STACK) {
		*o = r->s;
		sc_alu(o, &c, BPF_ADD, false, 0);
	} else {
		*o = c;
	}
	return o->smin > -lim && o->smax < lim;
}

/* Variable part of map value pointer r after its offset was narrowed to o. */
static void ptr_set_offset(struct vstate *st, unsigned frame, unsigned regno,
			   const struct vscalar *o)
{
	struct vreg *r = &st->frames[frame]->regs[regno];
	if ((r->type != VT_PTR_MAP_VALUE && r->type != VT_PTR_STACK) || sc_is_const(&r->s))
		return;
	struct vscalar v = *o, c;
	sc_const(&c, (uint64_t)(int64_t)r->off);
	sc_alu(&v, &c, BPF_SUB, false, 0);
	r->s = v;
	if (vwiden_id(r->id)) /* narrowed: no longer the loop's pointer plus a constant */
		r->id = 0;
}

/* Returns 1 when the current path ends, 0 to continue at env->pc, <0 on error. */
static int do_cond_jmp(struct verifier_env *env, const struct bpf_insn *in)
{
	size_t pc = env->pc;
	uint8_t op = BPF_OP(in->code);
	bool j32 = BPF_CLASS(in->code) == BPF_JMP32, x = BPF_SRC(in->code) == BPF_X;
	uint32_t target = (uint32_t)((int64_t)pc + in->off + 1), frame = env->cur.nframes - 1;
	struct vreg *a = vcur_reg(env, in->dst_reg);
	struct vreg b;
	if (a->type == VT_NOT_INIT)
		return verr(env, NB_VERR_UNINIT_REG, pc, "r%u is compared but was never set",
			    in->dst_reg);
	if (x) {
		b = *vcur_reg(env, in->src_reg);
		if (b.type == VT_NOT_INIT)
			return verr(env, NB_VERR_UNINIT_REG, pc, "r%u is compared but was never set",
				    in->src_reg);
	} else {
		vreg_set_const(&b, (uint64_t)(int64_t)in->imm);
	}
	int feasible = SC_TAKEN | SC_FALL;
	struct vscalar ta, tb, fa, fb;
	bool scalars = !is_ptr(a) && !is_ptr(&b), ptrs = false;
	struct vscalar pa, pb;
	struct null_mark nm_taken = { 0, false }, nm_fall = { 0, false };

	/* after "if a OP b" each operand's range depends on the other's */
	struct vorig both_org = { { a->org.b[0] | b.org.b[0], a->org.b[1] | b.org.b[1] } };
	if (scalars) {
		feasible = sc_branch(&a->s, &b.s, op, j32, &ta, &tb, &fa, &fb);
		if (feasible != (SC_TAKEN | SC_FALL)) {
			/* the outcome depended on these values: they must be precise */
			vreg_mark_precise(env, a);
			vreg_mark_precise(env, &b);
		}
	} else if ((op == BPF_JEQ || op == BPF_JNE) && !j32) {
		const struct vreg *p = is_ptr(a) ? a : &b, *o = is_ptr(a) ? &b : a;
		bool zero = o->type == VT_SCALAR && sc_is_const(&o->s) && o->s.t.value == 0;
		if (zero && p->type == VT_PTR_MAP_VALUE_OR_NULL) {
			struct null_mark *eq = op == BPF_JEQ ? &nm_taken : &nm_fall;
			struct null_mark *ne = op == BPF_JEQ ? &nm_fall : &nm_taken;
			*eq = (struct null_mark){ p->id, true };
			*ne = (struct null_mark){ p->id, false };
			vreg_mark_precise(env, o); /* a NULL check only because it is exactly 0 */
		} else if (zero && nonnull_ptr(env, p)) {
			feasible = op == BPF_JEQ ? SC_FALL : SC_TAKEN; /* pointers are never NULL */
			vreg_mark_precise(env, o); /* decided because it is exactly 0 */
		} else if (!(zero && (p->type == VT_PTR_MEM ||
				      (p->type == VT_PTR_CTX && env->hook->ctx_is_raw_memory)))) {
			ptrs = true; /* raw input memory may be NULL: that is input, not layout */
		}
	} else {
		ptrs = true;
	}
	if (ptrs) {
		/* Only pointers into one object compare by offset; any other comparison involving
		 * a pointer reveals address bits (which differ per process, hence per rank). */
		static const uint8_t as_signed[16] = {
			[BPF_JEQ >> 4] = BPF_JEQ,   [BPF_JNE >> 4] = BPF_JNE,
			[BPF_JGT >> 4] = BPF_JSGT,  [BPF_JGE >> 4] = BPF_JSGE,
			[BPF_JLT >> 4] = BPF_JSLT,  [BPF_JLE >> 4] = BPF_JSLE,
			[BPF_JSGT >> 4] = BPF_JSGT, [BPF_JSGE >> 4] = BPF_JSGE,
			[BPF_JSLT >> 4] = BPF_JSLT, [BPF_JSLE >> 4] = BPF_JSLE,
		};
		uint8_t sop = as_signed[op >> 4];
		char da[128], db[128];
		if (!is_ptr(a) || !is_ptr(&b) || !same_object(env, a, &b) || j32 || !sop ||
		    !ptr_offset(a, &pa) || !ptr_offset(&b, &pb)) {
			vreg_describe(env, a, da, sizeof(da));
			vreg_describe(env, &b, db, sizeof(db));
			return verr(env, NB_VERR_POINTER_CMP, pc,
				    "%scomparison of %s with %s: its outcome would depend on where "
				    "objects lie in memory (different per process and per rank); only "
				    "NULL checks and 64-bit comparisons of two pointers into the same "
				    "object are allowed",
				    j32 ? "32-bit " : "", da, db);
		}
		feasible = sc_branch(&pa, &pb, sop, false, &ta, &tb, &fa, &fb);
	}
	if (feasible == 0)
		return 1;
	/* control dependence: both successors learn the outcome of a rank-local comparison */
	if (feasible == (SC_TAKEN | SC_FALL))
		vtaint_branch(env, &env->cur, a, &b);
	if (feasible & SC_TAKEN) {
		struct vstate st;
		bool both = feasible & SC_FALL;
		if (both) {
			if (vstate_copy_compact(&st, &env->cur))
				return -ENOMEM;
		} else {
			st = env->cur;
		}
		if (scalars) {
			set_scalar_edge(&st, frame, in->dst_reg, &ta, both_org);
			if (x)
				set_scalar_edge(&st, frame, in->src_reg, &tb, both_org);
			lc_ptr_edge(env, &st, frame, in->dst_reg);
			if (x)
				lc_ptr_edge(env, &st, frame, in->src_reg);
		}
		if (ptrs) {
			ptr_set_offset(&st, frame, in->dst_reg, &ta);
			if (x)
				ptr_set_offset(&st, frame, in->src_reg, &tb);
		}
		if (nm_taken.id)
			for_each_reg(&st, null_mark_fn, &nm_taken);
		if (target <= pc) {
			st.loop_head = target;
			st.loop_jump = (uint32_t)pc;
		}
		if (!both) {
			env->cur = st;
			env->pc = target;
			return 0;
		}
		int err = verifier_push_pending(env, target, &st);
		if (err) {
			vstate_free(&st);
			return err;
		}
	}
	if (scalars) {
		set_scalar_edge(&env->cur, frame, in->dst_reg, &fa, both_org);
		if (x)
			set_scalar_edge(&env->cur, frame, in->src_reg, &fb, both_org);
		lc_ptr_edge(env, &env->cur, frame, in->dst_reg);
		if (x)
			lc_ptr_edge(env, &env->cur, frame, in->src_reg);
	}
	if (ptrs) {
		ptr_set_offset(&env->cur, frame, in->dst_reg, &fa);
		if (x)
			ptr_set_offset(&env->cur, frame, in->src_reg, &fb);
	}
	if (nm_fall.id)
		for_each_reg(&env->cur, null_mark_fn, &nm_fall);
	env->pc = (uint32_t)pc + 1;
	return 0;
}

/* ---- calls and exit ---- */

static int do_pseudo_call(struct verifier_env *env, const struct bpf_insn *in)
{
	size_t pc = env->pc;
	if (env->cur.nframes >= BPF_MAX_CALL_DEPTH)
		return verr(env, NB_VERR_CALL_DEPTH, pc,
			    "call nesting deeper than %d frames (recursion is not allowed)",
			    BPF_MAX_CALL_DEPTH);
	struct vframe *caller = vcur_frame(env), *f = vframe_new((uint32_t)pc);
	if (!f)
		return -ENOMEM;
	for (int r = 1; r <= 5; r++)
		f->regs[r] = caller->regs[r];
	f->regs[BPF_REG_FP].type = VT_PTR_STACK;
	sc_const(&f->regs[BPF_REG_FP].s, 0); /* no variable offset */
	f->regs[BPF_REG_FP].frameno = (uint8_t)env->cur.nframes;
	env->cur.frames[env->cur.nframes++] = f;
	env->pc = (uint32_t)((int64_t)pc + in->imm + 1);
	return 0;
}

static int do_exit(struct verifier_env *env)
{
	size_t pc = env->pc;
	struct vreg *r0 = vcur_reg(env, 0);
	char d[128];
	if (r0->type == VT_NOT_INIT && env->cur.nframes == 1)
		return verr(env, NB_VERR_RETURN, pc,
			    "program returns without setting r0; return a value on every path");
	if (env->cur.nframes == 1) {
		if (is_ptr(r0)) {
			vreg_describe(env, r0, d, sizeof(d));
			return verr(env, NB_VERR_POINTER_LEAK, pc,
				    "the program returns %s; it must return a number", d);
		}
		vcost_exit(env);
		return 1;
	}
	if (r0->type == VT_PTR_STACK && r0->frameno == env->cur.nframes - 1)
		return verr(env, NB_VERR_POINTER_LEAK, pc,
			    "function returns a pointer to its own stack, which dies on return");
	/* nor may the caller keep one through memory it passed in (a void function leaves
	 * r0 unset: the caller then may not read it) */
	uint8_t dying = (uint8_t)(env->cur.nframes - 1);
	for (uint32_t fi = 0; fi < dying; fi++) {
		const struct vframe *cf = env->cur.frames[fi];
		for (unsigned i = 0; i < cf->nslots; i++)
			if (slot_spilled(&cf->slots[i]) && cf->slots[i].spill.type == VT_PTR_STACK &&
			    cf->slots[i].spill.frameno == dying)
				return verr(env, NB_VERR_POINTER_LEAK, pc,
					    "function leaves a pointer to its own stack in its caller's "
					    "stack; it dies on return");
	}
	struct vframe *f = vcur_frame(env);
	if (f->loop)
		return verifier_bpf_loop_exit(env);
	struct vreg ret = *r0;
	uint32_t callsite = f->callsite;
	vframe_free(f);
	env->cur.nframes--;
	struct vframe *caller = vcur_frame(env);
	caller->regs[0] = ret;
	for (int r = 1; r <= 5; r++)
		vreg_set_not_init(&caller->regs[r]);
	env->pc = callsite + 1;
	return 0;
}

static int do_lddw(struct verifier_env *env, const struct bpf_insn *in)
{
	struct vreg *dst = vcur_reg(env, in->dst_reg);
	uint64_t imm = (uint32_t)in[0].imm | ((uint64_t)(uint32_t)in[1].imm << 32);
	if (in->src_reg == 0) {
		vreg_set_const(dst, imm);
	} else {
		vreg_set_not_init(dst);
		dst->map = (uint16_t)in->imm;
		sc_const(&dst->s, 0);
		if (in->src_reg == BPF_PSEUDO_FUNC) {
			int64_t t = (int64_t)env->pc + in->imm + 1;
			if (t == 0)
				return verr(env, NB_VERR_BAD_JUMP, env->pc,
					    "the address of the program's entry is taken; a callback "
					    "must be another function");
			dst->map = 0;
			dst->type = VT_PTR_FUNC;
			dst->off = (int32_t)t;
		} else if (in->src_reg == BPF_PSEUDO_MAP_FD) {
			dst->type = VT_CONST_MAP_PTR;
		} else {
			const struct nb_map_def *m = &env->maps[in->imm];
			if (in[1].imm < 0 || (uint32_t)in[1].imm > m->value_size)
				return verr(env, NB_VERR_MAP_VALUE_OOB, env->pc,
					    "address of offset %d in '%s' (%u bytes)", in[1].imm,
					    m->name, m->value_size);
			dst->type = VT_PTR_MAP_VALUE;
			dst->off = in[1].imm;
		}
	}
	env->pc += 2;
	return 0;
}

/* Executes the instruction at env->pc. 1 = path ended. */
static int step(struct verifier_env *env)
{
	const struct bpf_insn *in = &env->insns[env->pc];
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	int err;
	switch (cls) {
	case BPF_ALU:
	case BPF_ALU64:
		err = do_alu(env, in);
		if (!err)
			env->pc++;
		return err;
	case BPF_LDX:
	case BPF_ST:
	case BPF_STX:
		err = verifier_check_mem(env, in);
		if (!err)
			env->pc++;
		return err;
	case BPF_LD:
		return do_lddw(env, in);
	default:
		break;
	}
	/* jumps */
	if (op == BPF_EXIT)
		return do_exit(env);
	if (op == BPF_CALL) {
		if (in->src_reg == BPF_PSEUDO_CALL)
			return do_pseudo_call(env, in);
		if (in->imm == NB_HELPER_LOOP)
			return verifier_bpf_loop_call(env, in);
		err = verifier_check_helper(env, in);
		if (!err)
			env->pc++;
		return err;
	}
	if (op == BPF_JA) {
		int64_t t = (int64_t)env->pc + (cls == BPF_JMP32 ? in->imm : in->off) + 1;
		if (t <= (int64_t)env->pc) {
			env->cur.loop_head = (uint32_t)t;
			env->cur.loop_jump = env->pc;
		}
		env->pc = (uint32_t)t;
		return 0;
	}
	return do_cond_jmp(env, in);
}

/* The same bpf_loop callback run: the next round of a callback (verifier_loop.c) starts a
 * new run, where an exact repeat of the previous run's state is the next iteration of
 * bpf_loop (bounded by nr_loops), not a loop that never ends. */
static bool same_callback_runs(const struct vstate *a, const struct vstate *b)
{
	for (uint32_t f = 0; f < a->nframes && f < b->nframes; f++)
		if (a->frames[f]->loop != b->frames[f]->loop)
			return false;
	return true;
}

/* At a prune point: 1 = pruned, 0 = continue (state stored), <0 = error.
 * Fully explored states are candidates for pruning; states still being explored (the
 * current path's own loop iterations) are only checked for an exact repeat. Explored
 * states that keep failing to prune anything are dropped from the list. */
static int prune_point(struct verifier_env *env)
{
	unsigned n = 0;
	/* registers no later instruction reads are uninitialised from here on (Linux cleans
	 * stored states the same way): a stored state then shares them with its parent
	 * instead of copying leftovers, and two visits that differ only in them are equal */
	struct vframe *top = vcur_frame(env);
	uint16_t live = env->live_regs[env->pc];
	for (unsigned r = 0; r < BPF_REG_FP; r++)
		if (!((live >> r) & 1) && top->regs[r].type != VT_NOT_INIT)
			vreg_set_not_init(&top->regs[r]);
	struct vrecord **link = &env->records[env->pc];
	while (*link) {
		struct vrecord *r = *link;
		if (vstate_contains(r, &env->cur, env->live_regs[env->pc]) &&
		    vcost_prunable(r, env->cur.rec)) {
			r->hit++;
			vstate_prune_precision(env, r);
			vcost_pruned(env, r); /* its bound is the rest of this path's */
			env->stats.states_pruned++;
			return 1;
		}
		if (++r->miss > r->hit * 8 + 64) {
			*link = r->next; /* evicted; stays allocated for precision links */
			continue;
		}
		n++;
		link = &r->next;
	}
	if ((env->insn_flags[env->pc] & VF_LOOP_HEAD) && env->inprogress[env->pc]) {
		uint64_t hash = vstate_hash(&env->cur);
		struct vrecord **l = &env->live[vlive_bucket(env->pc, hash)];
		while (*l) {
			struct vrecord *r = *l;
			if (r->branches == 0) { /* explored since: a pruning candidate now */
				*l = r->hnext;
				continue;
			}
			if (r->pc == env->pc && r->hash == hash && vstate_equal(&r->st, &env->cur) &&
			    same_callback_runs(&r->st, &env->cur)) {
				/* point at the loop's back-edge (the loop condition in C) */
				size_t at = env->cur.loop_head == env->pc ? env->cur.loop_jump : env->pc;
				return verr(env, NB_VERR_INFINITE_LOOP, at,
					    "infinite loop: the loop at insn %u comes back to exactly the "
					    "same state; make sure its exit condition changes on every "
					    "iteration",
					    env->pc);
			}
			l = &r->hnext;
		}
	}
	/* widening (verifier_widen.c): the path's return to a widened head, or a widening */
	if (env->insn_flags[env->pc] & VF_LOOP_HEAD) {
		bool stored;
		int w = verifier_widen_head(env, &stored);
		if (w || stored)
			return w;
	}
	if (n + env->inprogress[env->pc] >= MAX_RECORDS_PER_INSN ||
	    env->nrecords >= VERIFIER_MAX_RECORDS)
		return 0;
	/* like Linux: outside loop heads, do not store a state every few instructions. At a
	 * loop head every iteration is stored at first; once a loop has run a few times, only
	 * every LOOP_SPARSE_INSNS processed instructions: a cycle still repeats one of the
	 * stored states (every visit is checked against them), while a long counted loop no
	 * longer copies its state on each iteration. */
	uint64_t since = env->stats.insns_processed - env->cur.stored_at;
	if (!(env->insn_flags[env->pc] & VF_LOOP_HEAD) ? since < MIN_INSNS_BETWEEN_STATES
	    : env->inprogress[env->pc] >= LOOP_DENSE_STATES && since < LOOP_SPARSE_INSNS)
		return 0;
	return vstate_store(env);
}

static int explore(struct verifier_env *env)
{
	struct vframe *f = vframe_new(0);
	if (!f)
		return -ENOMEM;
	env->cur.nframes = 1;
	env->cur.frames[0] = f;
	env->cur.loop_head = UINT32_MAX;
	env->cur.rec = NULL;
	if (env->hook->ctx_is_raw_memory) {
		f->regs[1].type = VT_PTR_MEM;
		vreg_set_const(&f->regs[2], env->mem_size);
	} else {
		f->regs[1].type = VT_PTR_CTX;
	}
	f->regs[BPF_REG_FP].type = VT_PTR_STACK;
	sc_const(&f->regs[BPF_REG_FP].s, 0); /* no variable offset */
	env->pc = 0;
	env->stats.peak_states = 1;
	env->cur.widen = NULL;
	int err = vstate_store(env); /* root: precision marks end here */
	bool first = true;
	while (!err) {
		if (++env->stats.insns_processed > env->budget) {
			uint32_t head = env->cur.loop_head;
			if (head == UINT32_MAX)
				return verr(env, NB_VERR_BUDGET, env->pc,
					    "exploration budget of %llu instructions exhausted",
					    (unsigned long long)env->budget);
			return verr(env, NB_VERR_BUDGET, env->cur.loop_jump,
				    "the loop at insn %u did not finish within the verification budget "
				    "of %llu instructions; bound its iteration count with a constant",
				    head, (unsigned long long)env->budget);
		}
		if (env->pc >= env->insn_cnt)
			return verr(env, NB_VERR_FALL_OFF, env->insn_cnt - 1,
				    "execution runs past the last instruction");
		verifier_widen_step(env);
		int r = 0;
		if ((env->insn_flags[env->pc] & VF_PRUNE) && !first)
			r = prune_point(env);
		first = false;
		if (r == 2)
			continue; /* a widening was undone: this head again, with the old state */
		if (r == 0) {
			env->insn_flags[env->pc] |= VF_VISITED;
			if (isa_is_lddw(&env->insns[env->pc]))
				env->insn_flags[env->pc + 1] |= VF_VISITED;
			env->cur.steps++; /* executed by this path (its cost, verifier_cost.c) */
			r = step(env);
		}
		if (r < 0)
			return r;
		if (r == 1) {
			int c = vrecord_path_done(env, env->cur.rec);
			vstate_free(&env->cur);
			if (c < 0)
				return c;
			if (env->undo) { /* a widening failed its proof or cost: walk the loop */
				struct vwiden *w = env->undo;
				env->undo = NULL;
				verifier_widen_rollback(env, w);
				if (env->restart)
					return -EAGAIN;
				continue;
			}
			if (env->npending == 0)
				return 0;
			struct vpending *p = &env->pending[--env->npending];
			env->cur = p->st;
			env->pc = p->pc;
			if (vstate_own(&env->cur))
				return -ENOMEM;
		}
	}
	return err;
}

/* Back to the start of an exploration (verifier_check: verify again). */
static void reset_run(struct verifier_env *env)
{
	size_t n = env->insn_cnt ? env->insn_cnt : 1;
	vstate_free(&env->cur);
	memset(&env->cur, 0, sizeof(env->cur));
	for (size_t i = 0; i < env->npending; i++)
		vstate_free(&env->pending[i].st);
	env->npending = 0;
	varena_free(env->arena);
	env->arena = NULL;
	memset(env->body_of, 0, n * sizeof(*env->body_of)); /* they lived in the arena */
	memset(env->records, 0, n * sizeof(*env->records));
	memset(env->inprogress, 0, n * sizeof(*env->inprogress));
	memset(env->live, 0, VERIFIER_LIVE_BUCKETS * sizeof(*env->live));
	for (size_t i = 0; i < n; i++)
		env->insn_flags[i] &= (uint8_t)~(VF_VISITED | VF_WARNED);
	if (env->warnings)
		memset(env->warnings, 0, sizeof(*env->warnings));
	if (env->taint_src)
		memset(env->taint_src, 0, n * sizeof(*env->taint_src));
	env->nrecords = 0;
	env->next_id = 0;
	env->next_tag = 0;
	env->next_wid = 0;
	env->root = NULL;
	env->cost_root = 0;
	env->cost_lost = false;
	env->undo = NULL;
	env->wasted = 0;
	env->all_recs = NULL;
	env->rec_seq = 0;
	env->widen_used = false;
	env->restart = false;
	env->failed = false;
	memset(env->diag, 0, sizeof(*env->diag));
	uint64_t runs = env->stats.runs;
	memset(&env->stats, 0, sizeof(env->stats));
	env->stats.runs = runs;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: stable on a loaded machine */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int verifier_check(const struct nb_program *prog, const struct nb_map_def *maps,
		   size_t map_cnt, const struct nb_hook_desc *hook,
		   const struct nb_verifier_opts *opts, struct nb_verifier_diag *diag,
		   struct nb_verifier_stats *stats)
{
	struct nb_verifier_diag local_diag;
	if (!diag)
		diag = &local_diag;
	memset(diag, 0, sizeof(*diag));
	if (!prog || !hook || (map_cnt && !maps) || (prog->insn_cnt && !prog->insns))
		return -EINVAL;
	uint64_t t0 = now_ns();
	struct verifier_env *env = calloc(1, sizeof(*env));
	if (!env)
		return -ENOMEM;
	env->prog = prog;
	env->insns = prog->insns;
	env->insn_cnt = prog->insn_cnt;
	env->maps = maps;
	env->map_cnt = map_cnt;
	env->hook = hook;
	env->diag = diag;
	env->mem_size = opts ? opts->mem_size : 0;
	env->warnings = opts ? opts->warnings : NULL;
	if (env->warnings)
		memset(env->warnings, 0, sizeof(*env->warnings));
	env->budget = opts && opts->budget ? opts->budget : hook->loop_budget;
	if (!env->budget)
		env->budget = 1000000;
	env->max_insns = opts && opts->max_insns ? opts->max_insns : hook->run_limit;
	if (!env->max_insns)
		env->max_insns = UINT64_MAX;
	int err = -ENOMEM;
	size_t n = prog->insn_cnt ? prog->insn_cnt : 1;
	/* rank variance is tracked only where an output must be rank-invariant */
	for (size_t i = 0; i < hook->field_cnt && !(opts && opts->allow_rank_local); i++)
		if (hook_output_rank_invariant(hook, &hook->fields[i]))
			env->taint_on = true;
	env->insn_flags = calloc(n, 1);
	env->records = calloc(n, sizeof(*env->records));
	env->inprogress = calloc(n, sizeof(*env->inprogress));
	env->live = calloc(VERIFIER_LIVE_BUCKETS, sizeof(*env->live));
	if (env->taint_on)
		env->taint_src = calloc(n, sizeof(*env->taint_src));
	env->widen_attempt = calloc(n, 1);
	env->body_of = calloc(n, sizeof(*env->body_of));
	env->widen_shape_miss = calloc(n, 1);
	env->walk_short = calloc(n, 1);
	if (env->insn_flags && env->records && env->inprogress && env->live &&
	    (env->taint_src || !env->taint_on) && env->widen_attempt && env->body_of &&
	    env->widen_shape_miss && env->walk_short) {
		err = verifier_check_structure(env);
		if (opts && opts->no_widen)
			env->widen_off = true;
		while (!err) {
			env->stats.runs++;
			err = explore(env);
			/* An error on a path below a widened loop head (it may come from a
			 * widened range) verifies again with widening off: errors are found and
			 * reported by walking, as before widening. */
			bool below = false;
			for (const struct vrecord *r = env->cur.rec; r && err && !below;
			     r = r->parent)
				below = r->widen_own != NULL;
			/* E-COST stays: its own fallback (walking the loop) was tried already */
			if (!env->restart && !(err && err != -ENOMEM && below &&
					       env->diag->code != NB_VERR_COST))
				break;
			env->widen_off = true;
			reset_run(env);
			err = 0;
		}
	}
	if (!err)
		err = vcost_check_total(env);
	if (!err && opts && opts->visited)
		for (size_t i = 0; i < prog->insn_cnt; i++)
			opts->visited[i] = (env->insn_flags[i] & VF_VISITED) ? 1 : 0;
	if (err && err != -EACCES && !env->failed) {
		diag->code = NB_VERR_OK;
		snprintf(diag->msg, sizeof(diag->msg), "verifier error %d", err);
	}
	vstate_free(&env->cur);
	for (size_t i = 0; i < env->npending; i++)
		vstate_free(&env->pending[i].st);
	for (const struct varena *a = env->arena; a; a = a->next)
		env->stats.state_bytes += a->used;
	varena_free(env->arena);
	free(env->widen_attempt);
	free(env->body_of);
	free(env->widen_shape_miss);
	free(env->walk_short);
	free(env->pred_start);
	free(env->preds);
	free(env->pending);
	free(env->records);
	free(env->inprogress);
	free(env->live_regs);
	free(env->live);
	free(env->insn_flags);
	free(env->taint_src);
	env->stats.time_ns = now_ns() - t0;
	env->stats.max_insns_limit = env->max_insns == UINT64_MAX ? 0 : env->max_insns;
	if (stats)
		*stats = env->stats;
	free(env);
	return err;
}

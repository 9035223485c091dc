/* Loop widening with a termination proof: a counted loop is verified in a few iterations
 * instead of one walk per iteration.
 *
 * When a path reaches a loop head H for the third time (two earlier visits stored on the
 * path), the current state is widened into W: every number that changed since the previous
 * visit becomes a range (a counter whose back-edge test has a constant bound gets
 * [current, bound - 1]; other changing numbers their type's full range), registers no later
 * instruction reads become uninitialised. W contains the current state, so exploring W
 * instead is sound for safety. Numbers that were constants stepping up or down are counter
 * candidates: each gets a tag (struct vreg lc/lc_off) meaning "equals this candidate's
 * value at the head plus lc_off", kept exactly through copies, spills, fills and constant
 * adds that cannot wrap (verifier_explore.c) and dropped by anything else.
 *
 * While W is being explored, a path that comes back to H (it stayed inside the natural
 * loop of H; leaving it ends the widening for that path) must
 *   1. be contained in W, comparing every position (W is not fully explored, so its
 *      precision marks are not final), and
 *   2. carry, for some candidate, its tag with a step of at least 1 in the candidate's
 *      direction; the candidates that do so on every arrival survive.
 * Then the path ends like a pruned one. A surviving counter strictly increases (decreases)
 * on every iteration, without wrapping, and stays in W's range, so the loop runs at most
 * (max arrival - W's min) / min step + 1 iterations: it terminates. Pruning keeps the
 * argument: a state with a tag is only pruned against a state with the same tag and step
 * (verifier_state.c). Run time: every concrete iteration is a path through W's explored
 * tree from the head to an arrival; when W is fully explored, its iteration bound times the
 * longest such path is its cost per run (verifier_cost.c, checked against the hook's
 * limit, E-COST), independent of the exploration budget.
 *
 * Numbers with one tag differ by their tags' offsets exactly, so a test on one narrows the
 * others (verifier_explore.c: clang's rotated loops test `i - 1` and step a copy of i). A
 * map value pointer that steps by a constant with a candidate is widened with it
 * (verifier_widen_ptr.c); other pointers that move make the loop walked.
 *
 * Any failure falls back to walking, never to a rejection: a failed proof (not contained,
 * no progress) verifies again with a guessed bound dropped or without widening this head;
 * a cost over the limit walks the loop when that fits the budget (walking counts each
 * iteration's own path) and is E-COST otherwise; any other verification error in a run
 * that widened verifies again with widening off, so those are found and reported by plain
 * walking (same codes and lines).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verifier/verifier_internal.h"

#define WIDEN_AFTER 2   /* earlier stored visits of the head on this path */
#define PREV_SEARCH 256 /* stored states walked back to find the previous visit */
#define WALK_SHORT 8    /* iterations left by a guessed bound that are walked, not widened */

/* ---- natural loop of a head: every insn that reaches a back-edge source without H ---- */

static void succs(const struct verifier_env *env, uint32_t pc, int64_t out[2])
{
	const struct bpf_insn *in = &env->insns[pc];
	uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
	out[0] = out[1] = -1;
	if (isa_is_lddw(in)) {
		out[0] = pc + 2;
		return;
	}
	if (cls != BPF_JMP && cls != BPF_JMP32) {
		out[0] = pc + 1;
		return;
	}
	if (op == BPF_EXIT)
		return;
	if (op == BPF_CALL) { /* the callee runs in its own frame: not part of the body */
		out[0] = pc + 1;
		return;
	}
	if (op == BPF_JA) {
		out[0] = (int64_t)pc + (cls == BPF_JMP32 ? in->imm : in->off) + 1;
		return;
	}
	out[0] = pc + 1;
	out[1] = (int64_t)pc + in->off + 1;
}

static int build_preds(struct verifier_env *env)
{
	size_t n = env->insn_cnt;
	uint32_t *start = calloc(n + 1, sizeof(*start));
	if (!start)
		return -ENOMEM;
	for (uint32_t pc = 0; pc < n; pc++) {
		if (env->insn_flags[pc] & VF_LDDW2)
			continue;
		int64_t s[2];
		succs(env, pc, s);
		for (int i = 0; i < 2; i++)
			if (s[i] >= 0 && s[i] < (int64_t)n)
				start[s[i] + 1]++;
	}
	for (size_t i = 0; i < n; i++)
		start[i + 1] += start[i];
	uint32_t *preds = malloc((start[n] ? start[n] : 1) * sizeof(*preds));
	uint32_t *fill = calloc(n, sizeof(*fill));
	if (!preds || !fill) {
		free(start);
		free(preds);
		free(fill);
		return -ENOMEM;
	}
	for (uint32_t pc = 0; pc < n; pc++) {
		if (env->insn_flags[pc] & VF_LDDW2)
			continue;
		int64_t s[2];
		succs(env, pc, s);
		for (int i = 0; i < 2; i++)
			if (s[i] >= 0 && s[i] < (int64_t)n)
				preds[start[s[i]] + fill[s[i]]++] = pc;
	}
	free(fill);
	env->pred_start = start;
	env->preds = preds;
	return 0;
}

static uint8_t *loop_body(struct verifier_env *env, uint32_t head)
{
	size_t n = env->insn_cnt;
	if (env->body_of[head])
		return env->body_of[head];
	if (!env->pred_start && build_preds(env))
		return NULL;
	uint8_t *body = varena_alloc(env, (n + 7) / 8);
	uint32_t *work = malloc(n * sizeof(*work));
	if (!body || !work) {
		free(work);
		return NULL;
	}
	memset(body, 0, (n + 7) / 8);
	vbody_add(body, head);
	size_t top = 0;
	/* back-edge sources: predecessors of the head at or after it */
	for (uint32_t k = env->pred_start[head]; k < env->pred_start[head + 1]; k++) {
		uint32_t p = env->preds[k];
		if (p >= head && !vbody_has(body, p)) {
			vbody_add(body, p);
			work[top++] = p;
		}
	}
	while (top) {
		uint32_t x = work[--top];
		for (uint32_t k = env->pred_start[x]; k < env->pred_start[x + 1]; k++) {
			uint32_t p = env->preds[k];
			if (!vbody_has(body, p)) {
				vbody_add(body, p);
				work[top++] = p;
			}
		}
	}
	free(work);
	env->body_of[head] = body;
	return body;
}

/* ---- a bound for the counter from the back-edge test (a guess: the proof checks it) ---- */

/* Position (register, or stack slot it was reloaded from) that the register compared by
 * the back-edge jump j holds: a backward scan over copies, constant adds and one reload. */
static int compared_pos(const struct verifier_env *env, uint32_t head, uint32_t j,
			int64_t *delta)
{
	unsigned r = env->insns[j].dst_reg;
	*delta = 0;
	for (uint32_t pc = j; pc-- > head;) {
		const struct bpf_insn *in = &env->insns[pc];
		uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
		if (env->insn_flags[pc] & VF_LDDW2)
			continue;
		if ((cls == BPF_JMP || cls == BPF_JMP32) && op == BPF_CALL) {
			if (r <= 5)
				return -1;
			continue;
		}
		if (in->dst_reg != r || cls == BPF_ST || cls == BPF_STX || cls == BPF_JMP ||
		    cls == BPF_JMP32)
			continue;
		if ((cls == BPF_ALU || cls == BPF_ALU64) && (op == BPF_ADD || op == BPF_SUB) &&
		    BPF_SRC(in->code) == BPF_K) {
			if (in->imm >= -(1 << 20) && in->imm <= (1 << 20))
				*delta += op == BPF_ADD ? in->imm : -(int64_t)in->imm;
			continue;
		}
		/* copies, also zero-extended ones (`w1 = w6`, or `r1 <<= 32; r1 >>= 32` after
		 * `r1 = r6`: the v1/v2 loop counter), which the proof sees as the counter itself
		 * while it is below 2^32 (verifier_explore.c) */
		if ((cls == BPF_ALU64 || cls == BPF_ALU) && op == BPF_MOV &&
		    BPF_SRC(in->code) == BPF_X && in->off == 0) {
			r = in->src_reg;
			continue;
		}
		if (cls == BPF_ALU64 && (op == BPF_RSH || op == BPF_LSH) &&
		    BPF_SRC(in->code) == BPF_K && in->imm == 32 && pc > head) {
			const struct bpf_insn *lsh = in - 1;
			if (op == BPF_RSH && lsh->code == (BPF_ALU64 | BPF_LSH | BPF_K) &&
			    lsh->imm == 32 && lsh->dst_reg == r) {
				pc--; /* both shifts: the copy before them names the counter */
				continue;
			}
		}
		if (cls == BPF_LDX && BPF_MODE(in->code) == BPF_MEM && in->src_reg == BPF_REG_FP &&
		    in->off < 0)
			return BPF_NREGS + (-in->off - 1) / 8;
		return -1;
	}
	return (int)r;
}

/* The same for a test placed before the head in the code (clang's rotated loops put the
 * exit test and the step at the end of the code, above the head's block): the value the
 * jump at j compares is the head's position *pos plus *out on every way back from j to
 * the head inside the body (register copies and constant adds; a reload ends the trace
 * at its slot), or false. The value is wanted before insn x, in register reg, plus delta. */
static bool trace_found(int *pos, int64_t *out, int p, int64_t delta)
{
	if (*pos >= 0 && (*pos != p || *out != delta))
		return false; /* two ways disagree */
	*pos = p;
	*out = delta;
	return true;
}

static bool trace_back(const struct verifier_env *env, uint32_t head, const uint8_t *body,
		       uint32_t x, unsigned reg, int64_t delta, int *pos, int64_t *out,
		       unsigned *budget)
{
	if (x == head)
		return trace_found(pos, out, (int)reg, delta);
	if (*budget == 0)
		return false; /* every visit counts: cycles inside the body end */
	(*budget)--;
	bool any = false;
	for (uint32_t k = env->pred_start[x]; k < env->pred_start[x + 1]; k++) {
		uint32_t p = env->preds[k];
		if (!vbody_has(body, p))
			continue;
		any = true;
		/* insn p ran just before x: undo it on the traced value */
		const struct bpf_insn *in = &env->insns[p];
		uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
		unsigned r = reg;
		int64_t d = delta;
		if ((cls == BPF_JMP || cls == BPF_JMP32) && op == BPF_CALL) {
			if (r <= 5)
				return false;
		} else if (in->dst_reg != r || cls == BPF_ST || cls == BPF_STX || cls == BPF_JMP ||
			   cls == BPF_JMP32) {
			/* r not written */
		} else if (cls == BPF_ALU64 && (op == BPF_ADD || op == BPF_SUB) &&
			   BPF_SRC(in->code) == BPF_K && in->imm >= -(1 << 20) && in->imm <= (1 << 20)) {
			d += op == BPF_ADD ? in->imm : -(int64_t)in->imm;
		} else if (cls == BPF_ALU64 && op == BPF_MOV && BPF_SRC(in->code) == BPF_X &&
			   in->off == 0) {
			r = in->src_reg;
		} else if (cls == BPF_LDX && BPF_MODE(in->code) == BPF_MEM &&
			   in->src_reg == BPF_REG_FP && in->off < 0) {
			if (!trace_found(pos, out, BPF_NREGS + (-in->off - 1) / 8, d))
				return false;
			continue;
		} else {
			return false;
		}
		if (!trace_back(env, head, body, p, r, d, pos, out, budget))
			return false;
	}
	return any;
}

static uint8_t negate_jmp(uint8_t op)
{
	switch (op) {
	case BPF_JEQ: return BPF_JNE;
	case BPF_JNE: return BPF_JEQ;
	case BPF_JLT: return BPF_JGE;
	case BPF_JGE: return BPF_JLT;
	case BPF_JLE: return BPF_JGT;
	case BPF_JGT: return BPF_JLE;
	case BPF_JSLT: return BPF_JSGE;
	case BPF_JSGE: return BPF_JSLT;
	case BPF_JSLE: return BPF_JSGT;
	case BPF_JSGT: return BPF_JSLE;
	default: return 0; /* JSET: no bound */
	}
}

/* The bound (inclusive) that "stay in the loop while x OP k" keeps a counter stepping in dir
 * from c in, or false. */
static bool stay_bound(uint8_t op, bool j32, int32_t imm, int dir, uint64_t c, uint64_t *bound)
{
	uint64_t k = j32 ? (uint32_t)imm : (uint64_t)(int64_t)imm;
	int64_t sk = j32 ? (int64_t)imm : (int64_t)imm;
	if (j32 && c > UINT32_MAX)
		return false;
	if (dir > 0) {
		switch (op) {
		case BPF_JLT:
		case BPF_JNE:
			if (k == 0)
				return false;
			*bound = k - 1;
			break;
		case BPF_JLE:
			*bound = k;
			break;
		case BPF_JSLT:
			if (sk <= 0 || (int64_t)c < 0)
				return false;
			*bound = (uint64_t)sk - 1;
			break;
		case BPF_JSLE:
			if (sk < 0 || (int64_t)c < 0)
				return false;
			*bound = (uint64_t)sk;
			break;
		default:
			return false;
		}
		return *bound >= c;
	}
	switch (op) {
	case BPF_JGT:
	case BPF_JNE:
		/* `x != -1` after a decrement: it stays while the step did not wrap below 0 */
		if (op == BPF_JNE && k == (j32 ? UINT32_MAX : UINT64_MAX)) {
			*bound = 0;
			break;
		}
		if (k == UINT64_MAX)
			return false;
		*bound = k + 1;
		break;
	case BPF_JGE:
		*bound = k;
		break;
	case BPF_JSGT:
		if (sk < 0)
			return false;
		*bound = (uint64_t)sk + 1;
		break;
	case BPF_JSGE:
		if (sk < 0)
			return false;
		*bound = (uint64_t)sk;
		break;
	default:
		return false;
	}
	if (j32 && *bound > UINT32_MAX)
		return false;
	return *bound <= c;
}

/* The test compares the head's value plus d: its bound for the head's value is bound - d.
 * Only ever loosened (the guess stays what it was where d points the other way): a looser
 * W is still checked, a tighter one would fail where the old guess held. */
static void loosen(uint64_t *bound, int64_t d, int dir)
{
	if (dir > 0 && d < 0)
		*bound = *bound > UINT64_MAX - (uint64_t)-d ? UINT64_MAX : *bound + (uint64_t)-d;
	else if (dir < 0 && d > 0)
		*bound = *bound < (uint64_t)d ? 0 : *bound - (uint64_t)d;
}

/* For a candidate at pos stepping in dir from c: the bound a test keeps it in (inclusive),
 * or false. The back-edge jump's test when it compares the counter with a constant (taken:
 * the loop goes on); otherwise a test in the body that leaves the loop on one edge, as in
 * the rotated loops clang emits (`w6 += 1; if w6 == 1000 goto out` at the head). */
static bool guess_bound(const struct verifier_env *env, uint32_t head, const uint8_t *body,
			unsigned pos, int dir, uint64_t c, uint64_t *bound)
{
	const struct vstate *st = &env->cur;
	if (st->loop_head == head && st->loop_jump < env->insn_cnt) {
		uint32_t j = st->loop_jump;
		const struct bpf_insn *in = &env->insns[j];
		uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
		int64_t d;
		if ((cls == BPF_JMP || cls == BPF_JMP32) && BPF_SRC(in->code) == BPF_K &&
		    op != BPF_JA && compared_pos(env, head, j, &d) == (int)pos &&
		    stay_bound(op, cls == BPF_JMP32, in->imm, dir, c, bound)) {
			loosen(bound, d, dir);
			return true;
		}
	}
	/* from the head down, then the tests above the head (traced back along every way) */
	for (uint32_t k = 0; k < env->insn_cnt; k++) {
		uint32_t j = k + head < env->insn_cnt ? k + head : k + head - (uint32_t)env->insn_cnt;
		const struct bpf_insn *in = &env->insns[j];
		uint8_t cls = BPF_CLASS(in->code), op = BPF_OP(in->code);
		if (!vbody_has(body, j) || (cls != BPF_JMP && cls != BPF_JMP32) ||
		    BPF_SRC(in->code) != BPF_K || op == BPF_JA || op == BPF_CALL || op == BPF_EXIT ||
		    (env->insn_flags[j] & VF_LDDW2))
			continue;
		int64_t taken = (int64_t)j + in->off + 1, fall = (int64_t)j + 1;
		bool tin = taken >= 0 && taken < (int64_t)env->insn_cnt && vbody_has(body, taken),
		     fin = fall < (int64_t)env->insn_cnt && vbody_has(body, fall);
		int tpos = -1;
		int64_t d = 0;
		unsigned budget = 512;
		if (tin == fin)
			continue;
		if (j >= head)
			tpos = compared_pos(env, head, j, &d);
		else if (!trace_back(env, head, body, j, in->dst_reg, 0, &tpos, &d, &budget))
			continue;
		if (tpos != (int)pos)
			continue;
		uint8_t stay = tin ? op : negate_jmp(op);
		if (stay && stay_bound(stay, cls == BPF_JMP32, in->imm, dir, c, bound)) {
			loosen(bound, d, dir);
			return true;
		}
	}
	return false;
}

/* ---- the widened state ---- */

/* A number containing c and p, with bounds that moved pushed to their type's limit. */
static void widen_scalar(struct vscalar *w, const struct vscalar *p, const struct vscalar *c)
{
	struct vscalar r = *c;
	r.umin = c->umin >= p->umin ? p->umin : 0;
	r.umax = c->umax <= p->umax ? p->umax : UINT64_MAX;
	r.smin = c->smin >= p->smin ? p->smin : INT64_MIN;
	r.smax = c->smax <= p->smax ? p->smax : INT64_MAX;
	r.u32min = c->u32min >= p->u32min ? p->u32min : 0;
	r.u32max = c->u32max <= p->u32max ? p->u32max : UINT32_MAX;
	r.s32min = c->s32min >= p->s32min ? p->s32min : INT32_MIN;
	r.s32max = c->s32max <= p->s32max ? p->s32max : INT32_MAX;
	/* A bound that moves goes to its extreme, where the value wraps into the other views:
	 * a grown unsigned maximum crosses the sign (and the low half wraps). Keeping the
	 * bounds of two visits that did not move yet failed containment later (bandit_pick's
	 * screening loop: three rolled-back widenings, then a walk of its 16 iterations), so a
	 * number whose 64-bit range moves gets its type's full range (its tnum kept when it
	 * did not change). */
	if (r.umin != p->umin || r.umax != p->umax || r.smin != p->smin || r.smax != p->smax) {
		r.umin = 0;
		r.umax = UINT64_MAX;
		r.smin = INT64_MIN;
		r.smax = INT64_MAX;
		r.u32min = 0;
		r.u32max = UINT32_MAX;
		r.s32min = INT32_MIN;
		r.s32max = INT32_MAX;
	}
	if (c->t.value != p->t.value || c->t.mask != p->t.mask)
		r.t = tnum_unknown();
	if (sc_sync(&r) && sc_in(&r, c))
		*w = r;
	else
		sc_unknown(w);
}

/* Spilled numbers narrower than 8 bytes always fit their bytes (verifier_mem.c). */
static void clamp_spill(struct vscalar *s, unsigned size)
{
	if (size >= 8)
		return;
	struct vscalar lim;
	sc_unknown_sized(&lim, size, false);
	struct vscalar r = *s;
	r.umax = r.umax < lim.umax ? r.umax : lim.umax;
	if (r.umin > r.umax || !sc_sync(&r)) {
		*s = lim;
		return;
	}
	*s = r;
}

/* Only numbers may differ between two visits: a pointer that moves (or a slot that changes
 * kind) would not be contained by a widening of the numbers alone. 2: a map value pointer
 * at a constant offset that moved by a constant (a pointer stepping through an array with
 * the counter, as tuned_rules_pick's 48-byte rules): widened with its counter. */
static int same_ptr(const struct vreg *a, const struct vreg *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case VT_NOT_INIT:
	case VT_SCALAR:
		return 1;
	case VT_PTR_MAP_VALUE:
		if (a->map == b->map && a->off != b->off && a->id == b->id &&
		    !vwiden_id(a->id) && sc_is_const(&a->s) && sc_equal(&a->s, &b->s))
			return 2;
		/* fall through */
	case VT_PTR_STACK:
		return a->map == b->map && a->off == b->off && a->frameno == b->frameno &&
		       sc_equal(&a->s, &b->s);
	default:
		return a->map == b->map && a->off == b->off && a->frameno == b->frameno;
	}
}

static bool moved(struct vmoving *mv, unsigned pos, int same)
{
	if (same != 2)
		return same == 1;
	if (mv->n == VWIDEN_MAX_PTR)
		return false;
	mv->pos[mv->n++] = (uint16_t)pos;
	return true;
}

static bool same_shape(const struct vframe *c, const struct vframe *p, uint16_t live,
		       struct vmoving *mv)
{
	for (unsigned r = 0; r < BPF_NREGS; r++)
		if (((live >> r) & 1) && r != BPF_REG_FP &&
		    !moved(mv, r, same_ptr(vframe_reg(c, r), vframe_reg(p, r))))
			return false;
	if (!same_ptr(vframe_reg(c, BPF_REG_FP), vframe_reg(p, BPF_REG_FP)))
		return false;
	static const struct vslot none;
	unsigned ns = c->nslots > p->nslots ? c->nslots : p->nslots;
	for (unsigned i = 0; i < ns; i++) {
		const struct vslot *a = i < c->nslots ? vframe_slot(c, i) : &none,
				   *b = i < p->nslots ? vframe_slot(p, i) : &none;
		if (memcmp(a->type, b->type, 8) || a->spill_at != b->spill_at ||
		    a->spill_size != b->spill_size)
			return false;
		if (slot_spilled(a) && !moved(mv, BPF_NREGS + i, same_ptr(&a->spill, &b->spill)))
			return false;
	}
	return true;
}

static int fail(struct verifier_env *env, struct vwiden *w, bool contain)
{
	uint8_t *a = &env->widen_attempt[w->head];
	*a = contain && w->guessed && *a < VWIDEN_NO_GUESS ? *a + 1 : VWIDEN_NEVER;
	verifier_widen_rollback(env, w);
	return 2;
}

static void unlink_rec(struct vrecord **link, const struct vrecord *r, bool hash)
{
	while (*link && *link != r)
		link = hash ? &(*link)->hnext : &(*link)->next;
	if (*link)
		*link = hash ? r->hnext : r->next;
}

void verifier_widen_rollback(struct verifier_env *env, struct vwiden *w)
{
	/* W's subtree: the pending branches pushed and the states stored since W (DFS) */
	vstate_free(&env->cur);
	while (env->npending > w->npending_at)
		vstate_free(&env->pending[--env->npending].st);
	uint64_t first = w->rec->seq;
	while (env->all_recs && env->all_recs->seq >= first) {
		struct vrecord *r = env->all_recs;
		env->all_recs = r->anext;
		if (r->branches || r == w->rec) /* W: left in progress by its failed completion */
			env->inprogress[r->pc]--;
		else
			unlink_rec(&env->records[r->pc], r, false);
		if (r->hashed)
			unlink_rec(&env->live[vlive_bucket(r->pc, r->hash)], r, true);
		env->nrecords--;
	}
	/* the walk that follows gets the budget it would have had without the attempt; the
	 * attempts together may waste one budget's worth, then widening stops */
	env->wasted += env->stats.insns_processed - w->processed_at;
	env->stats.insns_processed = w->processed_at;
	if (env->wasted > env->budget)
		env->widen_off = true;
	if (vstate_copy(&env->cur, &w->saved)) {
		env->cur.nframes = 0;
		env->restart = true; /* out of memory: verify again without widening */
		env->widen_off = true;
	}
	env->pc = w->head;
	env->stats.widen_rollbacks++;
}

static bool lc_mod_range(const struct vwiden *w, unsigned j)
{
	return w->cand[j].hi <= UINT32_MAX &&
	       w->cand[j].hi - w->cand[j].lo < (1ull << 32) - (1ull << 30);
}

bool vwiden_lc_mod_useful(const struct vstate *st, uint16_t lc)
{
	unsigned t = lc & ~VLC_MOD;
	for (const struct vwiden *w = st->widen; w; w = w->parent)
		if (t >= w->tag && t < w->tag + w->ncand)
			return lc_mod_range(w, t - w->tag);
	return false;
}

static int arrival(struct verifier_env *env, struct vwiden *w)
{
	if (w->nptr && !vwiden_ptr_arrival(env, w))
		return fail(env, w, false);
	if (!vstate_covers(&w->rec->st, &env->cur))
		return fail(env, w, true);
	struct vframe *top = env->cur.frames[0];
	uint8_t mask = 0;
	for (unsigned j = 0; j < w->ncand; j++) {
		if (!((w->mask >> j) & 1))
			continue;
		const struct vreg *r = vpos_reg(top, w->cand[j].pos);
		if (!r || r->type != VT_SCALAR || (r->lc & ~VLC_MOD) != w->tag + j)
			continue;
		/* congruent only: the new value and the head's differ by lc_off modulo 2^32;
		 * both lie in W's range (containment, above), and when that range is within 32
		 * bits and narrower than 2^32 - 2^30 (|lc_off| <= 2^30), only lc_off itself
		 * fits: the step is exact */
		if ((r->lc & VLC_MOD) && !lc_mod_range(w, j))
			continue;
		int64_t d = (int64_t)r->lc_off * w->cand[j].dir;
		if (d < 1)
			continue;
		uint64_t e = w->cand[j].dir > 0 ? r->s.umax : r->s.umin;
		if (!w->cand[j].seen) {
			w->cand[j].seen = true;
			w->cand[j].ext = e;
			w->cand[j].dmin = (uint64_t)d;
		} else {
			if (w->cand[j].dir > 0 ? e > w->cand[j].ext : e < w->cand[j].ext)
				w->cand[j].ext = e;
			if ((uint64_t)d < w->cand[j].dmin)
				w->cand[j].dmin = (uint64_t)d;
		}
		mask |= (uint8_t)(1u << j);
	}
	w->mask = mask;
	if (!mask)
		return fail(env, w, false);
	/* compared in full against W: every value that flowed here mattered */
	vstate_mark_cur_precise(env);
	vcost_arrival(env, w); /* one iteration's instructions */
	return 1;
}

int verifier_widen_head(struct verifier_env *env, bool *stored)
{
	uint32_t pc = env->pc;
	unsigned depth = 0;
	*stored = false;
	for (struct vwiden *w = env->cur.widen; w; w = w->parent, depth++)
		if (w->head == pc)
			return arrival(env, w);
	if (env->widen_off || env->widen_attempt[pc] >= VWIDEN_NEVER || env->cur.nframes != 1 ||
	    env->next_tag + VWIDEN_MAX_CAND >= VLC_MOD || env->widen_shape_miss[pc] > 8 ||
	    env->inprogress[pc] < WIDEN_AFTER || depth >= VWIDEN_DEPTH)
		return 0;
	/* the previous visits of this entry into the loop: stored states at the head since the
	 * path last was outside the loop's body (or at a widened head) */
	const uint8_t *body = loop_body(env, pc);
	if (!body)
		return -ENOMEM;
	const struct vrecord *prev = NULL;
	unsigned visits = 0, k = 0;
	for (const struct vrecord *r = env->cur.rec; r && k < PREV_SEARCH; r = r->parent, k++) {
		if (!vbody_has(body, r->pc) || (r->widen_own && r->pc == pc) || r->st.nframes != 1)
			break;
		if (r->pc == pc && visits++ == 0)
			prev = r;
	}
	if (!prev || visits < WIDEN_AFTER)
		return 0;
	struct vframe *top = env->cur.frames[0], *pf = prev->st.frames[0];
	uint16_t live = env->live_regs[pc];
	struct vmoving mv = { 0 };
	if (!same_shape(top, pf, live, &mv) ||
	    (mv.n && (env->next_id >= VWIDEN_ID_BASE / 2 ||
		      env->next_wid >= 0x80000000u - VWIDEN_ID_BASE - VWIDEN_MAX_PTR))) {
		env->widen_shape_miss[pc]++; /* a pointer that moved otherwise: walk */
		return 0;
	}
	int64_t cstep[VWIDEN_MAX_CAND] = { 0 }; /* candidate's value now minus before */
	struct vwiden w0 = { .head = pc };
	bool guess = env->widen_attempt[pc] < VWIDEN_NO_GUESS;
	/* candidates first (their positions and ranges), then apply */
	struct vscalar nv[VPOS_COUNT];
	bool change[VPOS_COUNT] = { false };
	unsigned npos = BPF_NREGS + top->nslots;
	for (unsigned pos = 0; pos < npos && pos < VPOS_COUNT; pos++) {
		if (pos == BPF_REG_FP)
			continue;
		if (pos < BPF_NREGS && !((live >> pos) & 1))
			continue; /* dead: made uninitialised below */
		struct vreg *c = vpos_reg(top, pos);
		struct vreg *p = pos < (unsigned)BPF_NREGS + pf->nslots ? vpos_reg(pf, pos) : NULL;
		if (!c || !p || c->type != VT_SCALAR || p->type != VT_SCALAR || sc_equal(&c->s, &p->s))
			continue;
		if (pos >= BPF_NREGS) {
			const struct vslot *cs = &top->slots[pos - BPF_NREGS],
					   *ps = vframe_slot(pf, pos - BPF_NREGS);
			if (cs->spill_at != ps->spill_at || cs->spill_size != ps->spill_size)
				continue;
		}
		unsigned size = pos < BPF_NREGS ? 8 : top->slots[pos - BPF_NREGS].spill_size;
		change[pos] = true;
		if (sc_is_const(&c->s) && sc_is_const(&p->s) && w0.ncand < VWIDEN_MAX_CAND) {
			uint64_t cv = c->s.t.value, pv = p->s.t.value, b;
			int dir = cv > pv ? 1 : -1;
			unsigned j = w0.ncand++;
			w0.cand[j].pos = (uint16_t)pos;
			w0.cand[j].dir = (int8_t)dir;
			cstep[j] = (int64_t)(cv - pv);
			if (guess && guess_bound(env, pc, body, pos, dir, cv, &b)) {
				uint64_t step = dir > 0 ? cv - pv : pv - cv;
				/* the counter reaches its exit test's bound within a few more
				 * iterations: walking them is cheaper than widening (and exact;
				 * bandit_observe's 8-iteration loops: 5,705 -> 4,321 processed).
				 * At most WALK_SHORT such visits per head: a guess that never
				 * comes true (another exit, a counter that wraps) still widens. */
				bool near = step && (dir > 0 ? cv <= b && (b - cv) / step < WALK_SHORT
							  : cv >= b && (cv - b) / step < WALK_SHORT);
				if (near && mv.n)
					return 0; /* and a pointer stepping: walked, as before */
				if (near && env->walk_short[pc] < WALK_SHORT) {
					env->walk_short[pc]++;
					return 0;
				}
				if (env->widen_attempt[pc] == VWIDEN_GUESS_STEP)
					b = dir > 0 ? (b + step < b ? UINT64_MAX : b + step)
						    : (b < step ? 0 : b - step);
				sc_unknown(&nv[pos]);
				nv[pos].umin = dir > 0 ? cv : b;
				nv[pos].umax = dir > 0 ? b : cv;
				w0.guessed = true;
				if (!sc_sync(&nv[pos]))
					sc_unknown_sized(&nv[pos], size, false);
			} else {
				sc_unknown_sized(&nv[pos], size, false);
			}
		} else {
			widen_scalar(&nv[pos], &p->s, &c->s);
		}
		if (pos >= BPF_NREGS)
			clamp_spill(&nv[pos], size);
		if (!sc_in(&nv[pos], &c->s)) /* W must contain the current state */
			sc_unknown_sized(&nv[pos], size, false);
	}
	if (w0.ncand == 0)
		return 0; /* nothing counts: walk (a repeat is found as an infinite loop) */
	if (mv.n && !vwiden_ptr_plan(&w0, &mv, top, pf, nv, cstep)) {
		env->widen_shape_miss[pc]++; /* no counter bounds where the pointer goes: walk */
		return 0;
	}
	struct vwiden *w = varena_alloc(env, sizeof(*w));
	if (!w)
		return -ENOMEM;
	*w = w0;
	w->body = (uint8_t *)body;
	w->parent = env->cur.widen;
	w->mask = (uint8_t)((1u << w->ncand) - 1);
	w->tag = env->next_tag + 1;
	env->next_tag += VWIDEN_MAX_CAND;
	int err = vstate_snapshot(env, &w->saved, &env->cur); /* to undo it */
	if (err)
		return err;
	for (unsigned r = 0; r < BPF_REG_FP; r++)
		if (!((live >> r) & 1))
			vreg_set_not_init(&top->regs[r]);
	for (unsigned pos = 0; pos < npos && pos < VPOS_COUNT; pos++) {
		if (!change[pos])
			continue;
		struct vreg *c = vpos_reg(top, pos);
		const struct vreg *p = vpos_reg(pf, pos);
		c->s = nv[pos];
		c->lc = 0;
		c->lc_off = 0;
		c->taint = vtaint_join(c->taint, p->taint);
		if (pos >= BPF_NREGS) { /* rank-local bytes of either visit stay rank-local */
			struct vslot *cs = &top->slots[pos - BPF_NREGS];
			const struct vslot *ps = vframe_slot(pf, pos - BPF_NREGS);
			cs->taint |= ps->taint;
			if (!cs->taint_src)
				cs->taint_src = ps->taint_src;
		}
	}
	for (unsigned j = 0; j < w->ncand; j++) {
		const struct vscalar *s = &nv[w->cand[j].pos];
		w->cand[j].lo = s->umin;
		w->cand[j].hi = s->umax;
	}
	vwiden_ptr_apply(env, w, &mv, top, pf);
	err = vstate_store(env); /* W: stored untagged */
	if (err)
		return err;
	w->rec = env->cur.rec;
	w->rec->widen_own = w;
	top = env->cur.frames[0];
	for (unsigned j = 0; j < w->ncand; j++) {
		struct vreg *c = vpos_reg(top, w->cand[j].pos);
		c->lc = (uint16_t)(w->tag + j);
		c->lc_off = 0;
	}
	w->jump = env->cur.loop_head == pc ? env->cur.loop_jump : pc;
	w->npending_at = env->npending;
	w->processed_at = env->stats.insns_processed;
	env->cur.widen = w;
	env->widen_used = true;
	env->stats.loops_widened++;
	*stored = true;
	return 0;
}

void verifier_widen_step(struct verifier_env *env)
{
	struct vwiden *w = env->cur.widen;
	if (!w)
		return;
	if (env->cur.nframes == 1) { /* in a callee or callback the loop is still running */
		struct vwiden *keep = w;
		for (struct vwiden *x = w; x; x = x->parent)
			if (!vbody_has(x->body, env->pc))
				keep = x->parent; /* left x's loop, and every loop inside it */
		for (struct vwiden *x = w; x != keep; x = x->parent)
			if (x->nptr)
				vwiden_ptr_leave(env, x);
		env->cur.widen = keep;
	}
}

bool verifier_widen_done(struct verifier_env *env, struct vwiden *w)
{
	(void)env;
	uint64_t best = UINT64_MAX;
	for (unsigned j = 0; j < w->ncand; j++) {
		if (!((w->mask >> j) & 1))
			continue;
		uint64_t n = 1;
		if (w->cand[j].seen) {
			uint64_t span;
			if (w->cand[j].dir > 0)
				span = w->cand[j].ext > w->cand[j].lo ? w->cand[j].ext - w->cand[j].lo : 0;
			else
				span = w->cand[j].hi > w->cand[j].ext ? w->cand[j].hi - w->cand[j].ext : 0;
			uint64_t q = span / w->cand[j].dmin;
			n = q == UINT64_MAX ? q : q + 1;
		}
		if (n < best)
			best = n;
	}
	if (best == UINT64_MAX)
		return false;
	w->n = best; /* the head is reached at most this often: n - 1 full iterations */
	return true;
}

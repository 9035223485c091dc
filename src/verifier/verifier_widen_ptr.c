/* Loop widening for map value pointers that step with the loop's counter (tuned_rules_pick
 * walks its 48-byte rules with `p += 48` beside `i++`): verifier_widen.c widens the numbers,
 * this file the pointers and their relation to a counter candidate.
 *
 * A pointer P that moves by a constant dp while candidate c moves by dc (dp a multiple of
 * dc) is widened with it: W gives P the offsets woff + k * ([lo, hi] - cv) (k = dp / dc,
 * [lo, hi] c's range in W, cv and woff their values now) and a fresh id. The claim is
 * relational - on every iteration P = woff + k * (c - cv) at the head - and W's numbers
 * alone do not state it, so it is checked at each arrival: a pointer with P's id there is
 * the head's P plus a constant (the id is dropped by anything else: a variable add, a
 * narrowing, a join with another pointer, leaving the loop), that constant must be k times
 * c's step on this path (c's tag), and c's new value lies in [lo, hi] (the containment
 * check): so the new P is again woff + k * (c - cv) and lies in W's offsets. States keep
 * the relation under pruning because a state with P's id is only pruned against one with
 * the same id (verifier_state.c), and the id ends where the loop does.
 */
#include <stdbool.h>
#include <stdint.h>

#include "verifier/verifier_internal.h"

bool vwiden_ptr_plan(struct vwiden *w, const struct vmoving *mv, const struct vframe *top,
		     const struct vframe *pf, const struct vscalar *nv, const int64_t *cstep)
{
	const int64_t lim = 1ll << 30;
	for (unsigned m = 0; m < mv->n; m++) {
		const struct vreg *c = vpos_reg((struct vframe *)top, mv->pos[m]),
				  *p = vpos_reg((struct vframe *)pf, mv->pos[m]);
		int64_t dp = (int64_t)c->off - p->off;
		bool ok = false;
		for (unsigned j = 0; j < w->ncand && !ok; j++) {
			const struct vreg *cr = vpos_reg((struct vframe *)top, w->cand[j].pos);
			int64_t dc = cstep[j];
			if (!cr || dc == 0 || dc < -lim || dc > lim || dp % dc)
				continue;
			uint64_t cv = cr->s.t.value, lo = nv[w->cand[j].pos].umin,
				 hi = nv[w->cand[j].pos].umax;
			if (lo > cv || hi < cv || cv - lo > (uint64_t)lim || hi - cv > (uint64_t)lim)
				continue;
			int64_t k = dp / dc, a = k * -(int64_t)(cv - lo), b = k * (int64_t)(hi - cv);
			int64_t smin = (a < b ? a : b) + (int64_t)c->s.t.value,
				smax = (a < b ? b : a) + (int64_t)c->s.t.value;
			if (smin < -lim || smax > lim)
				continue;
			struct vscalar r;
			sc_unknown(&r);
			r.smin = smin;
			r.smax = smax;
			if (!sc_sync(&r))
				continue;
			unsigned i = w->nptr++;
			w->ptr[i].woff = c->off;
			w->ptr[i].k = k;
			w->ptr[i].cand = (uint8_t)j;
			w->ptr[i].s = r;
			w->ptr[i].wid = 0;
			w->ptr[i].base = (int64_t)c->s.t.value;
			w->ptr[i].cv = cv;
			ok = true;
		}
		if (!ok)
			return false;
	}
	return true;
}

void vwiden_ptr_apply(struct verifier_env *env, struct vwiden *w, const struct vmoving *mv,
		      struct vframe *top, const struct vframe *pf)
{
	struct vreg orig[VWIDEN_MAX_PTR];
	for (unsigned m = 0; m < mv->n; m++)
		orig[m] = *vpos_reg(top, mv->pos[m]);
	for (unsigned m = 0; m < mv->n; m++) {
		/* copies of one pointer stay one pointer (one id) */
		for (unsigned e = 0; e < m && !w->ptr[m].wid; e++)
			if (orig[e].map == orig[m].map && orig[e].off == orig[m].off &&
			    orig[e].id == orig[m].id && w->ptr[e].k == w->ptr[m].k &&
			    w->ptr[e].cand == w->ptr[m].cand && sc_equal(&w->ptr[e].s, &w->ptr[m].s))
				w->ptr[m].wid = w->ptr[e].wid;
		if (!w->ptr[m].wid)
			w->ptr[m].wid = VWIDEN_ID_BASE + env->next_wid++;
		struct vreg *c = vpos_reg(top, mv->pos[m]);
		const struct vreg *p = vpos_reg((struct vframe *)pf, mv->pos[m]);
		c->s = w->ptr[m].s;
		c->id = w->ptr[m].wid;
		c->taint = vtaint_join(c->taint, p->taint);
	}
}

/* The top frame's next register or spill at or after *pos that is a map value pointer with
 * a widening id (any loop's); NULL after the last. *pos moves past it. */
static struct vreg *next_widened_ptr(struct vframe *top, unsigned *pos)
{
	for (unsigned npos = BPF_NREGS + top->nslots; *pos < npos;) {
		struct vreg *r = vpos_reg(top, (*pos)++);
		if (r && r->type == VT_PTR_MAP_VALUE && vwiden_id(r->id))
			return r;
	}
	return NULL;
}

bool vwiden_ptr_arrival(struct verifier_env *env, struct vwiden *w)
{
	if (env->next_id >= VWIDEN_ID_BASE)
		return false; /* ids could be confused */
	struct vframe *top = env->cur.frames[0];
	struct vreg *r;
	for (unsigned pos = 0; (r = next_widened_ptr(top, &pos));) {
		unsigned m = 0;
		while (m < w->nptr && w->ptr[m].wid != r->id)
			m++;
		if (m == w->nptr)
			continue; /* another loop's */
		unsigned j = w->ptr[m].cand;
		const struct vreg *cr = vpos_reg(top, w->cand[j].pos);
		if (!cr || cr->type != VT_SCALAR || cr->lc != w->tag + j ||
		    (int64_t)r->off - w->ptr[m].woff != w->ptr[m].k * (int64_t)cr->lc_off)
			return false;
		r->off = w->ptr[m].woff; /* the next iteration's head pointer, as W states it */
	}
	return true;
}

struct ptr_narrow {
	uint32_t wid;
	int64_t smin, smax;
	bool changed;
};

static void ptr_narrow_fn(struct vreg *r, void *arg)
{
	struct ptr_narrow *n = arg;
	if (r->type != VT_PTR_MAP_VALUE || r->id != n->wid ||
	    (n->smin <= r->s.smin && n->smax >= r->s.smax))
		return;
	struct vscalar v = r->s;
	v.smin = n->smin > v.smin ? n->smin : v.smin;
	v.smax = n->smax < v.smax ? n->smax : v.smax;
	if (v.smin > v.smax || !sc_sync(&v) || !sc_in(&r->s, &v))
		return;
	r->s = v;
	n->changed = true;
}

bool verifier_widen_narrow(struct vstate *st, const struct vreg *x)
{
	const struct vwiden *w = st->widen;
	while (w && !(x->lc >= w->tag && x->lc < w->tag + w->ncand))
		w = w->parent;
	if (!w || !w->nptr)
		return false;
	unsigned j = x->lc - w->tag;
	/* the counter's head value on this path: x - lc_off, within W's range */
	int64_t off = x->lc_off;
	uint64_t lo = w->cand[j].lo, hi = w->cand[j].hi, xl = x->s.umin, xh = x->s.umax;
	uint64_t hl = off >= 0 ? (xl < (uint64_t)off ? 0 : xl - (uint64_t)off)
			       : (xl > UINT64_MAX - (uint64_t)-off ? UINT64_MAX : xl + (uint64_t)-off);
	uint64_t hh = off >= 0 ? (xh < (uint64_t)off ? 0 : xh - (uint64_t)off)
			       : (xh > UINT64_MAX - (uint64_t)-off ? UINT64_MAX : xh + (uint64_t)-off);
	if (off >= 0 && xh < (uint64_t)off)
		return false; /* no value fits (a dead edge) */
	hl = hl > lo ? hl : lo;
	hh = hh < hi ? hh : hi;
	if (hl > hh)
		return false;
	bool changed = false;
	for (unsigned m = 0; m < w->nptr; m++) {
		if (w->ptr[m].cand != j)
			continue;
		/* lo, hi within cv -+ 2^30 (ptr_plan): no overflow */
		int64_t a = w->ptr[m].base + w->ptr[m].k * (int64_t)(hl - w->ptr[m].cv),
			b = w->ptr[m].base + w->ptr[m].k * (int64_t)(hh - w->ptr[m].cv);
		struct ptr_narrow n = { w->ptr[m].wid, a < b ? a : b, a < b ? b : a, false };
		for (uint32_t f = 0; f < st->nframes; f++) {
			struct vframe *fr = st->frames[f];
			for (int r = 0; r < BPF_NREGS; r++)
				ptr_narrow_fn(&fr->regs[r], &n);
			for (unsigned i = 0; i < fr->nslots; i++)
				if (slot_spilled(&fr->slots[i]))
					ptr_narrow_fn(&fr->slots[i].spill, &n);
		}
		changed |= n.changed;
	}
	return changed;
}

void vwiden_ptr_leave(struct verifier_env *env, const struct vwiden *w)
{
	struct vreg *r;
	for (unsigned pos = 0; (r = next_widened_ptr(env->cur.frames[0], &pos));)
		for (unsigned m = 0; m < w->nptr; m++)
			if (w->ptr[m].wid == r->id)
				r->id = 0;
}

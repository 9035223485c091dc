/* Abstract states: copies, containment (for pruning), exact equality (for infinite-loop
 * detection), stored states at prune points, and precision propagation.
 *
 * Precision: a scalar in a stored state only needs to be compared by range when its value
 * influenced a safety decision below that state (pointer arithmetic, a memory offset, a
 * divisor, a size argument, a branch with only one feasible edge). Scalars carry "origins":
 * the positions of the most recent stored state they derive from. A decision marks those
 * positions precise, and each stored state remembers, per position, the origins it had in
 * its own parent, so the marks flow up the path. States are only used for pruning once
 * fully explored, so their precise sets are complete by then.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verifier/verifier_internal.h"

struct vframe *vframe_new(uint32_t callsite)
{
	struct vframe *f = malloc(sizeof(*f));
	if (!f)
		return NULL;
	memset(f, 0, sizeof(*f));
	f->callsite = callsite;
	f->own = true;
	for (int i = 0; i < BPF_NREGS; i++)
		vreg_set_not_init(&f->regs[i]);
	return f;
}

/* *f = *src, with src's registers in full whichever form it holds them in */
static void frame_copy(struct vframe *f, const struct vframe *src)
{
	if (!src->rp) {
		*f = *src;
		return;
	}
	memcpy(f, src, VFRAME_HEAD);
	for (unsigned r = 0; r < BPF_NREGS; r++)
		f->regs[r] = *src->rp[r];
	f->rp = NULL;
}

/* n[0..f->nslots) = f's slots, in whichever form f holds them */
static void slots_gather(struct vslot *n, const struct vframe *f)
{
	if (!f->sp) {
		memcpy(n, f->slots, f->nslots * sizeof(struct vslot));
		return;
	}
	for (unsigned i = 0; i < f->nslots; i++)
		n[i] = *f->sp[i];
}

struct vframe *vframe_reserve(struct vstate *st, unsigned frameno, unsigned slot)
{
	struct vframe *f = st->frames[frameno];
	if (!f->own || slot >= f->cap) {
		unsigned cap = f->own && f->cap ? f->cap : 4;
		while (cap <= slot || cap < f->nslots)
			cap *= 2;
		if (cap > VSLOTS)
			cap = VSLOTS;
		struct vslot *n;
		if (f->own) {
			n = realloc(f->slots, cap * sizeof(struct vslot));
		} else { /* never written in place: the array may be a stored state's */
			n = malloc(cap * sizeof(struct vslot));
			if (n && f->nslots)
				slots_gather(n, f);
		}
		if (!n)
			return NULL;
		f->slots = n;
		f->sp = NULL;
		f->cap = (uint16_t)cap;
		f->own = true;
	}
	while (f->nslots <= slot) {
		memset(&f->slots[f->nslots], 0, sizeof(struct vslot));
		f->nslots++;
	}
	return f;
}

/* a copy owning its slots; compact: no spare capacity */
static struct vframe *frame_dup(const struct vframe *src, bool compact)
{
	size_t cap = compact || !src->own || src->cap < src->nslots ? src->nslots : src->cap;
	struct vframe *f = malloc(sizeof(*f));
	if (!f)
		return NULL;
	frame_copy(f, src);
	f->own = true;
	f->cap = (uint16_t)cap;
	f->slots = NULL;
	f->sp = NULL;
	if (cap) {
		f->slots = malloc(cap * sizeof(struct vslot));
		if (!f->slots) {
			free(f);
			return NULL;
		}
		slots_gather(f->slots, src);
	}
	return f;
}

static int state_copy(struct vstate *dst, const struct vstate *src, bool compact)
{
	*dst = *src;
	for (uint32_t i = 0; i < src->nframes; i++) {
		dst->frames[i] = frame_dup(src->frames[i], compact);
		if (!dst->frames[i]) {
			dst->nframes = i;
			vstate_free(dst);
			return -ENOMEM;
		}
	}
	return 0;
}

int vstate_copy(struct vstate *dst, const struct vstate *src)
{
	return state_copy(dst, src, false);
}

int vstate_copy_compact(struct vstate *dst, const struct vstate *src)
{
	return state_copy(dst, src, true);
}

/* Frame fi of stored state rec, or NULL */
static const struct vframe *stored_frame(const struct vrecord *rec, unsigned fi)
{
	return rec && fi < rec->st.nframes ? rec->st.frames[fi] : NULL;
}

/* Bit i: slot i of own frame f equals slot i of p. *all: every slot, and as many. */
static uint64_t same_slots(const struct vframe *p, const struct vframe *f, bool *all)
{
	uint64_t m = 0;
	unsigned n = f->nslots < p->nslots ? f->nslots : p->nslots, k = 0;
	_Static_assert(VSLOTS <= 64, "one bit per slot");
	for (unsigned i = 0; i < n; i++)
		if (memcmp(vframe_slot(p, i), &f->slots[i], sizeof(struct vslot)) == 0) {
			m |= 1ull << i;
			k++;
		}
	*all = f->nslots && p->nslots == f->nslots && k == n;
	return m;
}

void vstate_share_slots(struct vstate *st)
{
	for (uint32_t i = 0; i < st->nframes; i++) {
		struct vframe *f = st->frames[i];
		const struct vframe *p = f->own ? stored_frame(st->rec, i) : NULL;
		bool all = false;
		if (p)
			same_slots(p, f, &all);
		if (all) { /* the whole stack: share the stored state's (arena, never written) */
			free(f->slots);
			f->slots = p->slots;
			f->sp = p->sp;
			f->own = false;
			f->cap = 0;
		}
	}
}

int vstate_own(struct vstate *st)
{
	for (uint32_t i = 0; i < st->nframes; i++) {
		struct vframe *f = st->frames[i];
		if (f->own)
			continue;
		struct vslot *n = NULL;
		if (f->nslots) {
			n = malloc(f->nslots * sizeof(struct vslot));
			if (!n)
				return -ENOMEM;
			slots_gather(n, f);
		}
		f->slots = n;
		f->sp = NULL;
		f->cap = f->nslots;
		f->own = true;
	}
	return 0;
}

void vframe_free(struct vframe *f)
{
	if (f && f->own)
		free(f->slots);
	free(f);
}

void vstate_free(struct vstate *st)
{
	for (uint32_t i = 0; i < st->nframes; i++)
		vframe_free(st->frames[i]);
	st->nframes = 0;
}

void vreg_set_not_init(struct vreg *r)
{
	memset(r, 0, sizeof(*r));
	r->type = VT_NOT_INIT;
	sc_unknown(&r->s);
}

void vreg_set_scalar(struct vreg *r, const struct vscalar *s)
{
	memset(r, 0, sizeof(*r));
	r->type = VT_SCALAR;
	r->s = *s;
}

void vreg_set_unknown(struct vreg *r)
{
	struct vscalar s;
	sc_unknown(&s);
	vreg_set_scalar(r, &s);
}

void vreg_set_const(struct vreg *r, uint64_t v)
{
	struct vscalar s;
	sc_const(&s, v);
	vreg_set_scalar(r, &s);
}

/* ---- comparison ---- */

#define IDMAP_MAX 64
struct idmap {
	uint32_t old[IDMAP_MAX], cur[IDMAP_MAX];
	unsigned n;
	uint32_t fresh;
};

/* Every id of the old state must correspond to one id of the new state. */
static bool check_ids(struct idmap *m, uint32_t oid, uint32_t nid)
{
	if (oid == 0)
		return true;
	if (nid == 0)
		nid = 0x80000000u + m->fresh++; /* unlinked: matches nothing else */
	for (unsigned i = 0; i < m->n; i++)
		if (m->old[i] == oid)
			return m->cur[i] == nid;
	if (m->n == IDMAP_MAX)
		return false;
	m->old[m->n] = oid;
	m->cur[m->n] = nid;
	m->n++;
	return true;
}

static bool reg_cmp(const struct vreg *o, const struct vreg *n, bool precise, bool exact,
		    struct idmap *m)
{
	if (exact) {
		if (o->type != n->type)
			return false;
	} else if (o->type == VT_NOT_INIT) {
		return true; /* the old state's paths never read it */
	}
	if (o->type != n->type)
		return false;
	/* rank variance: the old state's paths were checked with at least the new taint
	 * (exactly the same for a repeat) */
	if (exact ? (o->taint != 0) != (n->taint != 0) : (n->taint && !o->taint))
		return false;
	/* a loop counter tag is a fact the old state's paths may have used to prove that the
	 * loop ends (verifier_widen.c): the new value must carry the same one */
	if (!exact && o->type == VT_SCALAR && o->lc && (n->lc != o->lc || n->lc_off != o->lc_off))
		return false;
	switch (o->type) {
	case VT_NOT_INIT:
		return true;
	case VT_SCALAR:
		if (!precise && !exact)
			return true;
		if (exact ? !sc_equal(&o->s, &n->s) : !sc_in(&o->s, &n->s))
			return false;
		return check_ids(m, o->id, n->id);
	case VT_PTR_CTX:
	case VT_PTR_MEM:
		return o->off == n->off;
	case VT_PTR_STACK: /* and its variable offset (buf[i & 15]), usually 0 */
		return o->off == n->off && o->frameno == n->frameno &&
		       (exact ? sc_equal(&o->s, &n->s) : sc_in(&o->s, &n->s));
	case VT_PTR_MAP_VALUE: /* the id says which pointers share an element */
		/* a pointer stepping with a widened loop's counter: the old state's paths
		 * relied on it being the loop's pointer (verifier_widen.c), not any pointer
		 * with these offsets */
		if (!exact && vwiden_id(o->id) && n->id != o->id)
			return false;
		return o->map == n->map && o->off == n->off &&
		       (exact ? sc_equal(&o->s, &n->s) : sc_in(&o->s, &n->s)) &&
		       check_ids(m, o->id, n->id);
	case VT_PTR_MAP_VALUE_OR_NULL:
		return o->map == n->map && o->off == n->off && n->id &&
		       check_ids(m, o->id, n->id);
	case VT_CONST_MAP_PTR:
		return o->map == n->map;
	case VT_PTR_FUNC:
		return o->off == n->off;
	default:
		return false;
	}
}

static const struct vslot invalid_slot;

static bool slot_cmp(const struct vslot *o, const struct vslot *n, bool precise, bool exact,
		     struct idmap *m)
{
	if (exact) {
		if (memcmp(o->type, n->type, 8) != 0 || o->taint != n->taint ||
		    o->spill_at != n->spill_at || o->spill_size != n->spill_size)
			return false;
		if (slot_spilled(o))
			return reg_cmp(&o->spill, &n->spill, true, true, m);
		return true;
	}
	/* a spilled pointer, or a scalar whose value mattered: the same spill is needed;
	 * otherwise every byte the old state had initialised must be some number */
	bool as_reg = slot_spilled(o) &&
		      (o->spill.type != VT_SCALAR || precise || o->spill.lc);
	if (as_reg) {
		if (!slot_spilled(n) || n->spill_at != o->spill_at || n->spill_size != o->spill_size)
			return false;
		if (!reg_cmp(&o->spill, &n->spill, precise, false, m))
			return false;
	}
	for (int b = 0; b < 8; b++) {
		if (o->type[b] == SB_INVALID ||
		    (as_reg && b >= o->spill_at && b < o->spill_at + o->spill_size))
			continue;
		/* old byte is MISC: any initialised scalar byte will do, if no more rank-local */
		if (n->type[b] == SB_INVALID ||
		    (n->type[b] == SB_SPILL && n->spill.type != VT_SCALAR) ||
		    ((n->taint & ~o->taint) >> b & 1))
			return false;
	}
	return true;
}

static bool bit(const uint64_t *bits, unsigned pos)
{
	return (bits[pos / 64] >> (pos % 64)) & 1;
}

static bool states_cmp(const struct vstate *o, const uint64_t *precise, const struct vstate *n,
		       bool exact, uint16_t live)
{
	struct idmap m = { .n = 0, .fresh = 1 };
	if (o->nframes != n->nframes)
		return false;
	if (exact ? (o->path_taint != 0) != (n->path_taint != 0)
		  : (n->path_taint && !o->path_taint))
		return false;
	for (uint32_t f = 0; f < o->nframes; f++) {
		const struct vframe *of = o->frames[f], *nf = n->frames[f];
		bool top = f + 1 == o->nframes;
		if (of->callsite != nf->callsite)
			return false;
		for (unsigned r = 0; r < BPF_NREGS; r++) {
			if (top && !exact && !((live >> r) & 1))
				continue; /* dead: never read by the old state's paths */
			if (!reg_cmp(vframe_reg(of, r), vframe_reg(nf, r), !top || bit(precise, r),
				     exact, &m))
				return false;
		}
		unsigned ns = of->nslots > nf->nslots ? of->nslots : nf->nslots;
		for (unsigned i = 0; i < ns; i++) {
			const struct vslot *os = i < of->nslots ? vframe_slot(of, i) : &invalid_slot;
			const struct vslot *nsl = i < nf->nslots ? vframe_slot(nf, i) : &invalid_slot;
			if (!slot_cmp(os, nsl, !top || bit(precise, 11 + i), exact, &m))
				return false;
		}
	}
	return true;
}

bool vstate_contains(const struct vrecord *old, const struct vstate *cur, uint16_t live)
{
	return states_cmp(&old->st, old->precise, cur, false, live);
}

bool vstate_covers(const struct vstate *old, const struct vstate *cur)
{
	static const uint64_t all[2] = { ~0ull, ~0ull };
	return states_cmp(old, all, cur, false, 0xffff);
}

/* A slot containing both a and b: equal bytes stay, a byte that is a number in both is
 * some number (a scalar spill of the same shape stays a spill of an unknown number, so a
 * loop counter in the callback's context still works as a map key), anything else is
 * uninitialised (reading it is then refused). */
static void slot_join(struct vslot *out, const struct vslot *a, const struct vslot *b)
{
	struct idmap m = { .n = 0, .fresh = 1 };
	if (slot_cmp(a, b, true, false, &m)) {
		*out = *a;
		return;
	}
	memset(out, 0, sizeof(*out));
	vreg_set_not_init(&out->spill);
	bool scalar_spills = slot_spilled(a) && slot_spilled(b) && a->spill.type == VT_SCALAR &&
			     b->spill.type == VT_SCALAR && a->spill_at == b->spill_at &&
			     a->spill_size == b->spill_size;
	for (int i = 0; i < 8; i++) {
		bool na = a->type[i] == SB_MISC ||
			  (a->type[i] == SB_SPILL && a->spill.type == VT_SCALAR);
		bool nb = b->type[i] == SB_MISC ||
			  (b->type[i] == SB_SPILL && b->spill.type == VT_SCALAR);
		out->type[i] = na && nb ? SB_MISC : SB_INVALID;
	}
	out->taint = a->taint | b->taint;
	out->taint_src = a->taint_src ? a->taint_src : b->taint_src;
	if (scalar_spills) {
		struct vscalar s;
		sc_unknown_sized(&s, a->spill_size, false);
		vreg_set_scalar(&out->spill, &s);
		out->spill.taint = vtaint_join(a->spill.taint, b->spill.taint);
		out->spill_at = a->spill_at;
		out->spill_size = a->spill_size;
		for (int i = a->spill_at; i < a->spill_at + a->spill_size; i++)
			out->type[i] = SB_SPILL;
	}
}

/* The scalar of position pos (register, then spilled slot) of frame f, or NULL. */
static struct vreg *join_pos(struct vframe *f, unsigned pos)
{
	if (pos < BPF_NREGS) { /* written only in the joined frame (full registers) */
		struct vreg *r = (struct vreg *)vframe_reg(f, pos);
		return r->type == VT_SCALAR ? r : NULL;
	}
	unsigned i = pos - BPF_NREGS;
	/* written only in the joined frame, which owns its flat arena array */
	struct vslot *sl = i < f->nslots ? (struct vslot *)vframe_slot(f, i) : NULL;
	if (sl && slot_spilled(sl) && sl->spill.type == VT_SCALAR)
		return &sl->spill;
	return NULL;
}

/* A link (scalars sharing an id: equal values) survives the join only when it holds in b
 * too: every position that has it in a has one common id in b. Otherwise it is dropped
 * everywhere. Regression: a bpf_loop callback that rewrote a slot linked to a caller
 * register kept the link in the joined state, so the next round never contained the
 * callback's exit and the loop did not settle (E-BUDGET after 16 rounds). */
static void join_ids(struct vstate *out, const struct vstate *a, const struct vstate *b)
{
	enum { MAXIDS = 64 };
	uint32_t xa[MAXIDS], yb[MAXIDS];
	bool bad[MAXIDS];
	unsigned n = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t fi = 0; fi < out->nframes; fi++) {
			struct vframe *fo = out->frames[fi], *fa = a->frames[fi], *fb = b->frames[fi];
			unsigned np = (unsigned)BPF_NREGS + fo->nslots;
			for (unsigned pos = 0; pos < np; pos++) {
				struct vreg *o = join_pos(fo, pos), *ra = join_pos(fa, pos),
					    *rb = join_pos(fb, pos);
				if (!o || !o->id)
					continue;
				unsigned k = 0;
				while (k < n && xa[k] != o->id)
					k++;
				if (pass == 1) {
					if (k == n || bad[k])
						o->id = 0;
					continue;
				}
				uint32_t y = rb ? rb->id : 0;
				if (k == n) {
					if (n == MAXIDS) {
						o->id = 0; /* too many to track: unlinked */
						continue;
					}
					xa[n] = o->id;
					yb[n] = y;
					bad[n++] = false;
				}
				if (!ra || ra->id != o->id || y == 0 || yb[k] != y)
					bad[k] = true;
				/* a widened loop's pointer stays one only where both are it */
				if (vwiden_id(o->id) && y != o->id)
					bad[k] = true;
			}
		}
	}
}

int vstate_join(struct verifier_env *env, struct vstate *out, const struct vstate *a,
		const struct vstate *b)
{
	*out = *a;
	out->path_taint = vtaint_join(a->path_taint, b->path_taint);
	for (uint32_t fi = 0; fi < a->nframes; fi++) {
		const struct vframe *fa = a->frames[fi], *fb = b->frames[fi];
		unsigned ns = fa->nslots > fb->nslots ? fa->nslots : fb->nslots;
		struct vframe *f = varena_alloc(env, sizeof(*f));
		if (!f)
			return -ENOMEM;
		frame_copy(f, fa);
		f->own = false;
		f->cap = 0;
		f->nslots = (uint16_t)ns;
		f->sp = NULL;
		f->slots = varena_alloc(env, (size_t)ns * sizeof(struct vslot));
		if (!f->slots)
			return -ENOMEM;
		for (unsigned i = 0; i < ns; i++)
			slot_join(&f->slots[i], i < fa->nslots ? vframe_slot(fa, i) : &invalid_slot,
				  i < fb->nslots ? vframe_slot(fb, i) : &invalid_slot);
		out->frames[fi] = f;
	}
	join_ids(out, a, b);
	return 0;
}

bool vstate_equal(const struct vstate *a, const struct vstate *b)
{
	static const uint64_t all[2] = { ~0ull, ~0ull };
	return states_cmp(a, all, b, true, 0xffff);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdull;
}

static uint64_t rotl(uint64_t v, unsigned k)
{
	return v << k | v >> (64 - k);
}

/* One mix per register: the fields are folded first (the hash only has to be equal for
 * equal states; a collision costs one vstate_equal). It ran at every visit of a loop head
 * and was 12 % of bandit.bpf.o's verification. */
static uint64_t reg_hash(uint64_t h, const struct vreg *r)
{
	bool sc = r->type == VT_SCALAR; /* map/off hold its loop counter tag: not part of it */
	uint64_t v = (uint64_t)r->type | (uint64_t)r->frameno << 8 |
		     (uint64_t)(sc ? 0 : r->map) << 16 | (uint64_t)(uint32_t)(sc ? 0 : r->off) << 32;
	v ^= (uint64_t)(r->id != 0) << 24 | (uint64_t)(r->taint != 0) << 25;
	if (r->type == VT_SCALAR || r->type == VT_PTR_MAP_VALUE || r->type == VT_PTR_STACK) {
		const struct vscalar *x = &r->s;
		v += rotl(x->t.value, 7) + rotl(x->t.mask, 13) + rotl(x->umin, 19) +
		     rotl(x->umax, 29) + rotl((uint64_t)x->smin, 37) + rotl((uint64_t)x->smax, 43) +
		     rotl((uint64_t)x->u32min << 32 | x->u32max, 53) +
		     rotl((uint64_t)(uint32_t)x->s32min << 32 | (uint32_t)x->s32max, 59);
	}
	return mix(h, v);
}

uint64_t vstate_hash(const struct vstate *st)
{
	uint64_t h = mix(0, st->nframes);
	h = mix(h, st->path_taint != 0);
	for (uint32_t f = 0; f < st->nframes; f++) {
		const struct vframe *fr = st->frames[f];
		h = mix(h, fr->callsite);
		for (int r = 0; r < BPF_NREGS; r++)
			h = reg_hash(h, vframe_reg(fr, r));
		for (unsigned i = 0; i < fr->nslots; i++) {
			const struct vslot *sl = vframe_slot(fr, i);
			uint64_t t;
			memcpy(&t, sl->type, 8);
			if (!t)
				continue; /* all INVALID: same as a missing slot */
			h = mix(h, rotl(t, 11) + ((uint64_t)i << 24 | (uint64_t)sl->taint << 16 |
						  (uint64_t)sl->spill_at << 8 | sl->spill_size));
			if (slot_spilled(sl))
				h = reg_hash(h, &sl->spill);
		}
	}
	return h;
}

/* ---- precision ---- */

void vstate_mark_precise(struct vrecord *rec, struct vorig org)
{
	while (rec && (org.b[0] | org.b[1])) {
		struct vorig fresh = { { org.b[0] & ~rec->precise[0], org.b[1] & ~rec->precise[1] } };
		if (!(fresh.b[0] | fresh.b[1]))
			return;
		rec->precise[0] |= fresh.b[0];
		rec->precise[1] |= fresh.b[1];
		struct vorig up = { { 0, 0 } };
		/* the set bits only: a loop over every position was 14 % of bandit_observe */
		for (unsigned w = 0; w < 2; w++) {
			for (uint64_t b = fresh.b[w]; b; b &= b - 1) {
				unsigned pos = w * 64 + (unsigned)__builtin_ctzll(b);
				if (pos >= rec->npos)
					break;
				uint64_t m = 1ull << (pos % 64);
				if (rec->org_self[w] & m) {
					up.b[w] |= m;
				} else if (rec->org_other[w] & m) {
					unsigned k = (unsigned)__builtin_popcountll(rec->org_other[w] & (m - 1));
					if (w)
						k += (unsigned)__builtin_popcountll(rec->org_other[0]);
					up.b[0] |= rec->other_org[k].b[0];
					up.b[1] |= rec->other_org[k].b[1];
				}
			}
		}
		org = up;
		rec = rec->parent;
	}
}

void vreg_mark_precise(struct verifier_env *env, const struct vreg *r)
{
	if (r->type == VT_SCALAR)
		vstate_mark_precise(env->cur.rec, r->org);
}

static struct vorig pos_org(const struct vframe *f, unsigned pos)
{
	static const struct vorig none;
	if (pos < BPF_NREGS)
		return vframe_reg(f, pos)->type == VT_SCALAR ? vframe_reg(f, pos)->org : none;
	unsigned i = pos - BPF_NREGS;
	const struct vslot *sl = i < f->nslots ? vframe_slot(f, i) : NULL;
	if (sl && slot_spilled(sl) && sl->spill.type == VT_SCALAR)
		return sl->spill.org;
	return none;
}

static void org_or(struct vorig *acc, struct vorig o)
{
	acc->b[0] |= o.b[0];
	acc->b[1] |= o.b[1];
}

/* Scalars of caller frames are always compared exactly: their origins become precise.
 * Origins are collected first and propagated once (marking is a closure: the union's is
 * the union of each one's). */
static void mark_caller_frames(struct verifier_env *env, bool clear)
{
	struct vorig acc = { { 0, 0 } };
	for (uint32_t fi = 0; fi + 1 < env->cur.nframes; fi++) {
		struct vframe *f = env->cur.frames[fi];
		for (unsigned pos = 0; pos < (unsigned)BPF_NREGS + f->nslots; pos++) {
			org_or(&acc, pos_org(f, pos));
			if (!clear)
				continue;
			if (pos < BPF_NREGS)
				memset(&f->regs[pos].org, 0, sizeof(struct vorig));
			else
				memset(&f->slots[pos - BPF_NREGS].spill.org, 0, sizeof(struct vorig));
		}
	}
	vstate_mark_precise(env->cur.rec, acc);
}

void vstate_mark_all_precise(struct verifier_env *env)
{
	struct vorig acc = { { 0, 0 } };
	for (uint32_t fi = 0; fi < env->cur.nframes; fi++) {
		struct vframe *f = env->cur.frames[fi];
		for (unsigned pos = 0; pos < (unsigned)BPF_NREGS + f->nslots; pos++) {
			org_or(&acc, pos_org(f, pos));
			if (pos < BPF_NREGS)
				memset(&f->regs[pos].org, 0, sizeof(struct vorig));
			else
				memset(&f->slots[pos - BPF_NREGS].spill.org, 0, sizeof(struct vorig));
		}
	}
	vstate_mark_precise(env->cur.rec, acc);
}

void vstate_mark_cur_precise(struct verifier_env *env)
{
	struct vframe *top = vcur_frame(env);
	struct vorig acc = { { 0, 0 } };
	for (unsigned pos = 0; pos < (unsigned)BPF_NREGS + top->nslots && pos < VPOS_COUNT; pos++)
		org_or(&acc, pos_org(top, pos));
	vstate_mark_precise(env->cur.rec, acc);
	mark_caller_frames(env, false);
}

void vstate_prune_precision(struct verifier_env *env, const struct vrecord *old)
{
	struct vframe *top = vcur_frame(env);
	struct vorig acc = { { 0, 0 } };
	for (unsigned w = 0; w < 2; w++) {
		for (uint64_t b = old->precise[w]; b; b &= b - 1) {
			unsigned pos = w * 64 + (unsigned)__builtin_ctzll(b);
			if (pos >= VPOS_COUNT)
				break;
			org_or(&acc, pos_org(top, pos));
		}
	}
	vstate_mark_precise(env->cur.rec, acc);
	mark_caller_frames(env, false);
}

void *varena_alloc(struct verifier_env *env, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	struct varena *a = env->arena;
	if (!a || a->size - a->used < size) {
		size_t cap = size > 60000 ? size : 60000;
		a = malloc(sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->next = env->arena;
		a->used = 0;
		a->size = cap;
		env->arena = a;
	}
	void *p = (char *)a->data + a->used;
	a->used += size;
	return p;
}

/* an uninitialised register exactly as vreg_set_not_init makes it */
static const struct vreg vreg_uninit = {
	.type = VT_NOT_INIT,
	.s = { .t = { 0, ~0ull }, .umin = 0, .umax = ~0ull, .smin = INT64_MIN, .smax = INT64_MAX,
	       .u32min = 0, .u32max = UINT32_MAX, .s32min = INT32_MIN, .s32max = INT32_MAX },
};

/* A stored state's frame: its header, and a pointer per register to an uninitialised
 * register, to the equal register of the path's previous stored state (rec's frame fi),
 * or to a copy. A walked iteration changes a few registers: the rest are not copied. */
static struct vframe *frame_compact(struct verifier_env *env, const struct vframe *src,
				    const struct vrecord *rec, unsigned fi)
{
	struct vframe *f = varena_alloc(env, VFRAME_HEAD);
	const struct vreg **rp = varena_alloc(env, BPF_NREGS * sizeof(*rp));
	if (!f || !rp)
		return NULL;
	memcpy(f, src, VFRAME_HEAD);
	const struct vframe *p = stored_frame(rec, fi);
	for (unsigned r = 0; r < BPF_NREGS; r++) {
		const struct vreg *x = &src->regs[r];
		if (memcmp(x, &vreg_uninit, sizeof(*x)) == 0) {
			rp[r] = &vreg_uninit;
		} else if (p && memcmp(vframe_reg(p, r), x, sizeof(*x)) == 0) {
			rp[r] = vframe_reg(p, r);
		} else {
			struct vreg *c = varena_alloc(env, sizeof(*c));
			if (!c)
				return NULL;
			*c = *x;
			rp[r] = c;
		}
	}
	f->rp = rp;
	return f;
}

/* compact: registers as frame_compact stores them (stored states; other snapshots are
 * written into as a whole, vstate_join, or copied from often) */
static int snapshot(struct verifier_env *env, struct vstate *out, const struct vstate *st,
		    bool compact)
{
	*out = *st;
	for (uint32_t i = 0; i < st->nframes; i++) {
		const struct vframe *src = st->frames[i];
		struct vframe *f;
		if (compact && !src->rp) {
			f = frame_compact(env, src, st->rec, i);
		} else {
			f = varena_alloc(env, sizeof(*f));
			if (f)
				frame_copy(f, src);
		}
		if (!f)
			return -ENOMEM;
		f->own = false;
		f->cap = 0;
		out->frames[i] = f;
		if (!src->own || !src->nslots)
			continue; /* already in the arena (or none) */
		/* slots unchanged since the path's last stored state are shared with it: the
		 * whole array when all are, else slot by slot when that saves memory (a
		 * pointer per slot against a copy per shared slot) */
		const struct vframe *p = stored_frame(st->rec, i);
		bool all = false;
		uint64_t same = p ? same_slots(p, src, &all) : 0;
		if (all) {
			f->slots = p->slots;
			f->sp = p->sp;
			continue;
		}
		unsigned n = src->nslots, nsame = (unsigned)__builtin_popcountll(same);
		if (nsame * sizeof(struct vslot) <= n * sizeof(struct vslot *)) {
			f->slots = varena_alloc(env, (size_t)n * sizeof(struct vslot));
			if (!f->slots)
				return -ENOMEM;
			memcpy(f->slots, src->slots, (size_t)n * sizeof(struct vslot));
			continue;
		}
		const struct vslot **sp = varena_alloc(env, (size_t)n * sizeof(*sp));
		struct vslot *copy = n > nsame ? varena_alloc(env, (size_t)(n - nsame) *
								       sizeof(struct vslot))
					       : NULL;
		if (!sp || (n > nsame && !copy))
			return -ENOMEM;
		for (unsigned k = 0, j = 0; k < n; k++) {
			if ((same >> k) & 1) {
				sp[k] = vframe_slot(p, k);
			} else {
				copy[j] = src->slots[k];
				sp[k] = &copy[j++];
			}
		}
		f->slots = NULL;
		f->sp = sp;
	}
	return 0;
}

int vstate_snapshot(struct verifier_env *env, struct vstate *out, const struct vstate *st)
{
	return snapshot(env, out, st, false);
}

void varena_free(struct varena *a)
{
	while (a) {
		struct varena *n = a->next;
		free(a);
		a = n;
	}
}

int vstate_store(struct verifier_env *env)
{
	struct vrecord *rec = varena_alloc(env, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	memset(rec, 0, offsetof(struct vrecord, st));
	rec->pc = env->pc;
	rec->parent = env->cur.rec;
	rec->branches = 1;
	rec->dist = env->cur.steps;
	struct vframe *top = vcur_frame(env);
	rec->npos = (uint32_t)BPF_NREGS + top->nslots;
	unsigned nother = 0;
	for (unsigned pos = 0; pos < rec->npos; pos++) {
		struct vorig o = pos_org(top, pos);
		uint64_t m = 1ull << (pos % 64);
		if (!(o.b[0] | o.b[1]))
			continue;
		if (o.b[pos / 64] == m && !o.b[1 - pos / 64]) {
			rec->org_self[pos / 64] |= m;
		} else {
			rec->org_other[pos / 64] |= m;
			nother++;
		}
	}
	if (nother) {
		rec->other_org = varena_alloc(env, nother * sizeof(struct vorig));
		if (!rec->other_org)
			return -ENOMEM;
		nother = 0;
		for (unsigned pos = 0; pos < rec->npos; pos++)
			if ((rec->org_other[pos / 64] >> (pos % 64)) & 1)
				rec->other_org[nother++] = pos_org(top, pos);
	}
	mark_caller_frames(env, true);
	/* retag: values now derive from this state's positions */
	for (unsigned pos = 0; pos < (unsigned)BPF_NREGS + top->nslots; pos++) {
		struct vorig o = { { 0, 0 } };
		o.b[pos / 64] = 1ull << (pos % 64);
		if (pos < BPF_NREGS)
			top->regs[pos].org = top->regs[pos].type == VT_SCALAR ? o : (struct vorig){ { 0, 0 } };
		else
			top->slots[pos - BPF_NREGS].spill.org = o;
	}
	int err = snapshot(env, &rec->st, &env->cur, true);
	if (err)
		return err;
	env->cur.rec = rec;
	env->cur.stored_at = env->stats.insns_processed;
	env->cur.steps = 0;
	if (!env->root)
		env->root = rec;
	/* every cycle of the program passes a loop head: only there can a state repeat */
	if (env->insn_flags[env->pc] & VF_LOOP_HEAD) {
		rec->hash = vstate_hash(&rec->st);
		rec->hashed = true;
		uint32_t b = vlive_bucket(rec->pc, rec->hash);
		rec->hnext = env->live[b];
		env->live[b] = rec;
	}
	env->inprogress[env->pc]++;
	rec->seq = env->rec_seq++;
	rec->anext = env->all_recs;
	env->all_recs = rec;
	env->nrecords++;
	env->stats.states_stored++;
	return 0;
}

/* A path ended: states whose every path below is explored become pruning candidates, and
 * their cost bounds final (verifier_cost.c). <0: E-COST. */
int vrecord_path_done(struct verifier_env *env, struct vrecord *rec)
{
	while (rec) {
		if (rec->branches)
			rec->branches--;
		if (rec->branches)
			return 0;
		if (rec->widen_own && !verifier_widen_done(env, rec->widen_own)) {
			/* its proof failed: the path above continues from the state before it */
			env->undo = rec->widen_own;
			return 0;
		}
		int c = vcost_finish(env, rec);
		if (c) /* <0: over the cost limit; 1: walk that widened loop instead */
			return c < 0 ? c : 0;
		env->inprogress[rec->pc]--;
		rec->next = env->records[rec->pc]; /* leaves env->live lazily (branches == 0) */
		env->records[rec->pc] = rec;
		rec = rec->parent;
	}
	return 0;
}

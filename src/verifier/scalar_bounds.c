/* Scalar domain: tnum plus unsigned/signed 64- and 32-bit ranges, with one sc_sync() that
 * derives every representation from the others after each operation. All range maths is
 * done in unsigned arithmetic or with overflow builtins (the verifier runs under UBSan).
 * Range transfer functions are written once over a width (32 or 64 bits).
 */
#include <string.h>

#include "verifier/verifier_internal.h"

#define U32_MASK 0xffffffffull

/* Bounds at one width: u in [0, 2^w-1], s in [-2^(w-1), 2^(w-1)-1]. */
struct wb {
	uint64_t umin, umax;
	int64_t smin, smax;
};

static uint64_t w_umax(int w) { return w == 64 ? ~0ull : U32_MASK; }
static int64_t w_smin(int w) { return w == 64 ? INT64_MIN : INT32_MIN; }
static int64_t w_smax(int w) { return w == 64 ? INT64_MAX : INT32_MAX; }
static uint64_t max_u(uint64_t a, uint64_t b) { return a > b ? a : b; }
static uint64_t min_u(uint64_t a, uint64_t b) { return a < b ? a : b; }
static int64_t max_s(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min_s(int64_t a, int64_t b) { return a < b ? a : b; }

static void wb_unknown_u(struct wb *r, int w) { r->umin = 0; r->umax = w_umax(w); }
static void wb_unknown_s(struct wb *r, int w) { r->smin = w_smin(w); r->smax = w_smax(w); }

static struct wb wb_get(const struct vscalar *s, int w)
{
	if (w == 64)
		return (struct wb){ s->umin, s->umax, s->smin, s->smax };
	return (struct wb){ s->u32min, s->u32max, s->s32min, s->s32max };
}

static void wb_put(struct vscalar *s, int w, const struct wb *b)
{
	if (w == 64) {
		s->umin = b->umin; s->umax = b->umax; s->smin = b->smin; s->smax = b->smax;
	} else {
		s->u32min = (uint32_t)b->umin; s->u32max = (uint32_t)b->umax;
		s->s32min = (int32_t)b->smin; s->s32max = (int32_t)b->smax;
	}
}

static struct tnum t_get(const struct vscalar *s, int w)
{
	return w == 64 ? s->t : tnum_subreg(s->t);
}

static bool u_add(uint64_t a, uint64_t b, int w, uint64_t *r)
{
	return !__builtin_add_overflow(a, b, r) && *r <= w_umax(w);
}
static bool u_mul(uint64_t a, uint64_t b, int w, uint64_t *r)
{
	return !__builtin_mul_overflow(a, b, r) && *r <= w_umax(w);
}
static bool s_add(int64_t a, int64_t b, int w, int64_t *r)
{
	return !__builtin_add_overflow(a, b, r) && *r >= w_smin(w) && *r <= w_smax(w);
}
static bool s_sub(int64_t a, int64_t b, int w, int64_t *r)
{
	return !__builtin_sub_overflow(a, b, r) && *r >= w_smin(w) && *r <= w_smax(w);
}
static bool s_mul(int64_t a, int64_t b, int w, int64_t *r)
{
	return !__builtin_mul_overflow(a, b, r) && *r >= w_smin(w) && *r <= w_smax(w);
}

void sc_const(struct vscalar *s, uint64_t v)
{
	s->t = tnum_const(v);
	s->umin = s->umax = v;
	s->smin = s->smax = (int64_t)v;
	s->u32min = s->u32max = (uint32_t)v;
	s->s32min = s->s32max = (int32_t)(uint32_t)v;
}

void sc_unknown(struct vscalar *s)
{
	s->t = tnum_unknown();
	s->umin = 0; s->umax = ~0ull;
	s->smin = INT64_MIN; s->smax = INT64_MAX;
	s->u32min = 0; s->u32max = UINT32_MAX;
	s->s32min = INT32_MIN; s->s32max = INT32_MAX;
}

void sc_unknown_sized(struct vscalar *s, unsigned bytes, bool sx)
{
	sc_unknown(s);
	if (bytes >= 8)
		return;
	unsigned bits = bytes * 8;
	if (sx) {
		s->smin = -(int64_t)(1ull << (bits - 1));
		s->smax = (int64_t)((1ull << (bits - 1)) - 1);
		sc_sync(s);
		return;
	}
	/* zero-extended: what sc_sync derives from the tnum, built directly (every load of a
	 * narrow field comes here; test_verifier_scalar compares the two) */
	uint64_t max = (1ull << bits) - 1;
	s->t = tnum_cast(s->t, bytes);
	s->umax = max;
	s->smin = 0;
	s->smax = (int64_t)max;
	s->u32max = (uint32_t)max;
	if (bits < 32) {
		s->s32min = 0;
		s->s32max = (int32_t)max;
	}
}

bool sc_is_const(const struct vscalar *s)
{
	return tnum_is_const(s->t);
}

bool sc_is_empty(const struct vscalar *s)
{
	return s->umin > s->umax || s->smin > s->smax || s->u32min > s->u32max ||
	       s->s32min > s->s32max || (s->t.value & s->t.mask);
}

/* One round of deductions; every rule only ever narrows, and each is sound on its own. */
static bool sync_round(struct vscalar *s)
{
	struct tnum t = s->t, t32 = tnum_subreg(s->t);
	const uint64_t sign = 1ull << 63;

	/* tnum -> ranges */
	s->umin = max_u(s->umin, t.value);
	s->umax = min_u(s->umax, t.value | t.mask);
	s->smin = max_s(s->smin, (int64_t)(t.value | (t.mask & sign)));
	s->smax = min_s(s->smax, (int64_t)(t.value | (t.mask & ~sign)));
	s->u32min = (uint32_t)max_u(s->u32min, t32.value);
	s->u32max = (uint32_t)min_u(s->u32max, t32.value | t32.mask);
	s->s32min = (int32_t)max_s(s->s32min, (int32_t)(uint32_t)(t32.value | (t32.mask & 0x80000000u)));
	s->s32max = (int32_t)min_s(s->s32max, (int32_t)(uint32_t)(t32.value | (t32.mask & 0x7fffffffu)));

	/* 64 -> 32 when the upper halves agree */
	if ((s->umin >> 32) == (s->umax >> 32)) {
		s->u32min = (uint32_t)max_u(s->u32min, (uint32_t)s->umin);
		s->u32max = (uint32_t)min_u(s->u32max, (uint32_t)s->umax);
		if ((int32_t)(uint32_t)s->umin <= (int32_t)(uint32_t)s->umax) {
			s->s32min = (int32_t)max_s(s->s32min, (int32_t)(uint32_t)s->umin);
			s->s32max = (int32_t)min_s(s->s32max, (int32_t)(uint32_t)s->umax);
		}
	}
	if (((uint64_t)s->smin >> 32) == ((uint64_t)s->smax >> 32)) {
		s->u32min = (uint32_t)max_u(s->u32min, (uint32_t)s->smin);
		s->u32max = (uint32_t)min_u(s->u32max, (uint32_t)s->smax);
		if ((int32_t)(uint32_t)s->smin <= (int32_t)(uint32_t)s->smax) {
			s->s32min = (int32_t)max_s(s->s32min, (int32_t)(uint32_t)s->smin);
			s->s32max = (int32_t)min_s(s->s32max, (int32_t)(uint32_t)s->smax);
		}
	}
	/* 32-bit signed <-> unsigned when the range does not cross the sign boundary */
	if (s->s32min >= 0 || s->s32max < 0) {
		s->u32min = (uint32_t)max_u(s->u32min, (uint32_t)s->s32min);
		s->u32max = (uint32_t)min_u(s->u32max, (uint32_t)s->s32max);
	}
	if ((int32_t)s->u32min <= (int32_t)s->u32max) {
		s->s32min = (int32_t)max_s(s->s32min, (int32_t)s->u32min);
		s->s32max = (int32_t)min_s(s->s32max, (int32_t)s->u32max);
	}
	/* 32 -> 64: the low half of any value lies in [u32min, u32max] */
	s->umin = max_u(s->umin, (s->umin & ~U32_MASK) | s->u32min);
	s->umax = min_u(s->umax, (s->umax & ~U32_MASK) | s->u32max);
	s->smin = max_s(s->smin, (int64_t)(((uint64_t)s->smin & ~U32_MASK) | s->u32min));
	s->smax = min_s(s->smax, (int64_t)(((uint64_t)s->smax & ~U32_MASK) | s->u32max));
	/* 64-bit signed <-> unsigned */
	if (s->smin >= 0 || s->smax < 0) {
		s->umin = max_u(s->umin, (uint64_t)s->smin);
		s->umax = min_u(s->umax, (uint64_t)s->smax);
	}
	if ((int64_t)s->umin <= (int64_t)s->umax) {
		s->smin = max_s(s->smin, (int64_t)s->umin);
		s->smax = min_s(s->smax, (int64_t)s->umax);
	}
	if (sc_is_empty(s))
		return false;
	/* ranges -> tnum */
	if (!tnum_intersect(s->t, tnum_range(s->umin, s->umax), &t))
		return false;
	if (!tnum_intersect(tnum_subreg(t), tnum_range(s->u32min, s->u32max), &t32))
		return false;
	s->t = tnum_with_subreg(t, t32);
	return true;
}

bool sc_sync(struct vscalar *s)
{
	if (sc_is_empty(s))
		return false;
	/* a constant all of whose ranges are that value is its own sync (most calls: moves
	 * and arithmetic on constants) */
	if (tnum_is_const(s->t)) {
		uint64_t v = s->t.value;
		if (s->umin == v && s->umax == v && s->smin == (int64_t)v && s->smax == (int64_t)v &&
		    s->u32min == (uint32_t)v && s->u32max == (uint32_t)v &&
		    s->s32min == (int32_t)(uint32_t)v && s->s32max == (int32_t)(uint32_t)v)
			return true;
	}
	/* a number of the full range with no known bit (results of most arithmetic on
	 * unknowns) is its own sync too */
	if (s->t.mask == ~0ull && s->umin == 0 && s->umax == ~0ull && s->smin == INT64_MIN &&
	    s->smax == INT64_MAX && s->u32min == 0 && s->u32max == UINT32_MAX &&
	    s->s32min == INT32_MIN && s->s32max == INT32_MAX)
		return true;
	struct vscalar before = *s;
	if (!sync_round(s))
		return false;
	/* a round is a function of the scalar: one that changed nothing would again */
	if (memcmp(&before, s, sizeof(*s)) != 0 && !sync_round(s))
		return false;
	return !sc_is_empty(s);
}

bool sc_contains(const struct vscalar *s, uint64_t v)
{
	return tnum_contains(s->t, v) && v >= s->umin && v <= s->umax &&
	       (int64_t)v >= s->smin && (int64_t)v <= s->smax && (uint32_t)v >= s->u32min &&
	       (uint32_t)v <= s->u32max && (int32_t)(uint32_t)v >= s->s32min &&
	       (int32_t)(uint32_t)v <= s->s32max;
}

bool sc_in(const struct vscalar *o, const struct vscalar *i)
{
	return o->umin <= i->umin && i->umax <= o->umax && o->smin <= i->smin &&
	       i->smax <= o->smax && o->u32min <= i->u32min && i->u32max <= o->u32max &&
	       o->s32min <= i->s32min && i->s32max <= o->s32max && tnum_in(o->t, i->t);
}

bool sc_equal(const struct vscalar *a, const struct vscalar *b)
{
	return sc_in(a, b) && sc_in(b, a);
}

void sc_zext32(struct vscalar *s)
{
	s->t = tnum_subreg(s->t);
	s->umin = s->u32min;
	s->umax = s->u32max;
	s->smin = (int64_t)s->u32min;
	s->smax = (int64_t)s->u32max;
	sc_sync(s);
}

/* Range transfer of one op at width w; the tnum is done by the caller. */
static void wb_alu(struct wb *r, const struct wb *a, const struct wb *b, uint8_t op, int w,
		   bool b_const, unsigned k)
{
	wb_unknown_u(r, w);
	wb_unknown_s(r, w);
	switch (op) {
	case BPF_ADD:
		if (!u_add(a->umin, b->umin, w, &r->umin) || !u_add(a->umax, b->umax, w, &r->umax))
			wb_unknown_u(r, w);
		if (!s_add(a->smin, b->smin, w, &r->smin) || !s_add(a->smax, b->smax, w, &r->smax))
			wb_unknown_s(r, w);
		break;
	case BPF_SUB:
		if (a->umin >= b->umax) {
			r->umin = a->umin - b->umax;
			r->umax = a->umax - b->umin;
		}
		if (!s_sub(a->smin, b->smax, w, &r->smin) || !s_sub(a->smax, b->smin, w, &r->smax))
			wb_unknown_s(r, w);
		break;
	case BPF_MUL: {
		if (!u_mul(a->umin, b->umin, w, &r->umin) || !u_mul(a->umax, b->umax, w, &r->umax))
			wb_unknown_u(r, w);
		int64_t p[4];
		if (s_mul(a->smin, b->smin, w, &p[0]) && s_mul(a->smin, b->smax, w, &p[1]) &&
		    s_mul(a->smax, b->smin, w, &p[2]) && s_mul(a->smax, b->smax, w, &p[3])) {
			r->smin = min_s(min_s(p[0], p[1]), min_s(p[2], p[3]));
			r->smax = max_s(max_s(p[0], p[1]), max_s(p[2], p[3]));
		}
		break;
	}
	case BPF_AND:
		r->umax = min_u(a->umax, b->umax);
		if (a->smin >= 0 && b->smin >= 0) {
			r->smin = 0;
			r->smax = min_s(a->smax, b->smax);
		} else if (a->smin >= 0) {
			r->smin = 0;
			r->smax = a->smax;
		} else if (b->smin >= 0) {
			r->smin = 0;
			r->smax = b->smax;
		}
		break;
	case BPF_OR:
		r->umin = max_u(a->umin, b->umin);
		break;
	case BPF_LSH:
		if (b_const && a->umax <= (w_umax(w) >> k)) {
			r->umin = a->umin << k;
			r->umax = a->umax << k;
		}
		break;
	case BPF_RSH:
		if (b_const) {
			r->umin = a->umin >> k;
			r->umax = a->umax >> k;
		}
		break;
	case BPF_ARSH:
		if (b_const) {
			r->smin = a->smin >> k;
			r->smax = a->smax >> k;
		}
		break;
	case BPF_DIV: /* unsigned; a zero divisor gives 0 (RFC 9669) */
		r->umin = b->umax ? a->umin / b->umax : 0;
		r->umax = b->umin ? a->umax / b->umin : a->umax;
		if (b->umin == 0)
			r->umin = 0;
		break;
	case BPF_MOD: /* unsigned; a zero divisor leaves the dividend */
		r->umin = 0;
		r->umax = b->umin ? min_u(a->umax, b->umax - 1) : a->umax;
		break;
	default:
		break;
	}
}

static struct tnum t_alu(struct tnum a, struct tnum b, uint8_t op, int w, bool b_const,
			 unsigned k)
{
	struct tnum r;
	switch (op) {
	case BPF_ADD: r = tnum_add(a, b); break;
	case BPF_SUB: r = tnum_sub(a, b); break;
	case BPF_MUL: r = tnum_mul(a, b); break;
	case BPF_AND: r = tnum_and(a, b); break;
	case BPF_OR: r = tnum_or(a, b); break;
	case BPF_XOR: r = tnum_xor(a, b); break;
	case BPF_LSH: r = b_const ? tnum_lshift(a, k) : tnum_unknown(); break;
	case BPF_RSH: r = b_const ? tnum_rshift(a, k) : tnum_unknown(); break;
	case BPF_ARSH: r = b_const ? tnum_arshift(a, k, (unsigned)w) : tnum_unknown(); break;
	default: r = tnum_unknown(); break;
	}
	return w == 32 ? tnum_subreg(r) : r;
}

/* Sign-extends the low `bits` of v. */
static uint64_t sext(uint64_t v, unsigned bits)
{
	if (bits >= 64)
		return v;
	uint64_t m = 1ull << (bits - 1);
	v &= (1ull << bits) - 1;
	return (v ^ m) - m;
}

/* Concrete RFC 9669 semantics for constant folding. */
static uint64_t alu_concrete(uint64_t a, uint64_t b, uint8_t op, bool alu32, int16_t off)
{
	int w = alu32 ? 32 : 64;
	uint64_t m = w_umax(w);
	a &= m;
	b &= m;
	uint64_t r = 0;
	switch (op) {
	case BPF_ADD: r = a + b; break;
	case BPF_SUB: r = a - b; break;
	case BPF_MUL: r = a * b; break;
	case BPF_OR: r = a | b; break;
	case BPF_AND: r = a & b; break;
	case BPF_XOR: r = a ^ b; break;
	case BPF_LSH: r = a << (b & (uint64_t)(w - 1)); break;
	case BPF_RSH: r = a >> (b & (uint64_t)(w - 1)); break;
	case BPF_ARSH: r = (uint64_t)((int64_t)sext(a, (unsigned)w) >> (b & (uint64_t)(w - 1))); break;
	case BPF_NEG: r = 0 - a; break;
	case BPF_DIV:
		if (off == 1) {
			int64_t sa = (int64_t)sext(a, (unsigned)w), sb = (int64_t)sext(b, (unsigned)w);
			if (sb == 0) r = 0;
			else if (sb == -1) r = 0 - (uint64_t)sa;
			else r = (uint64_t)(sa / sb);
		} else {
			r = b ? a / b : 0;
		}
		break;
	case BPF_MOD:
		if (off == 1) {
			int64_t sa = (int64_t)sext(a, (unsigned)w), sb = (int64_t)sext(b, (unsigned)w);
			if (sb == 0) r = (uint64_t)sa;
			else if (sb == -1) r = 0;
			else r = (uint64_t)(sa % sb);
		} else {
			r = b ? a % b : a;
		}
		break;
	case BPF_MOV:
		r = off ? sext(b, (unsigned)off) : b;
		break;
	default: break;
	}
	return r & m;
}

/* Signed quotient range of a / [blo, bhi] with the divisor of one sign, from the corners:
 * truncating division is monotone in each argument there. false when w-bit overflow
 * (INT_MIN / -1) is possible. */
static bool sdiv_corners(const struct wb *a, int64_t blo, int64_t bhi, int w, int64_t *lo,
			 int64_t *hi)
{
	if (a->smin == w_smin(w) && blo <= -1 && bhi >= -1)
		return false;
	int64_t c[4] = { a->smin / blo, a->smin / bhi, a->smax / blo, a->smax / bhi };
	*lo = min_s(min_s(c[0], c[1]), min_s(c[2], c[3]));
	*hi = max_s(max_s(c[0], c[1]), max_s(c[2], c[3]));
	return true;
}

/* Signed div/mod (off = 1) ranges at width w (RFC 9669: x s/ 0 = 0, x s% 0 = x,
 * INT_MIN s/ -1 = INT_MIN, INT_MIN s% -1 = 0). Regression: results were unknown, so a
 * bounded index computed with sdiv/smod was rejected as out of range. */
static void wb_sdivmod(struct wb *r, const struct wb *a, const struct wb *b, uint8_t op, int w)
{
	wb_unknown_u(r, w);
	wb_unknown_s(r, w);
	if (op == BPF_MOD) {
		/* |r| < |b|, r has the sign of a (or is 0); a zero divisor gives a itself */
		/* magnitudes saturate at INT64_MAX: -INT64_MIN is not an int64_t */
		int64_t bmag = max_s(b->smin == w_smin(w) || b->smin == INT64_MIN ? w_smax(w)
				     : b->smin < 0 ? -b->smin : b->smin,
				     b->smax < 0 ? (b->smax == INT64_MIN ? INT64_MAX : -b->smax) : b->smax);
		int64_t lim = b->smin == w_smin(w) ? w_smax(w) : bmag > 0 ? bmag - 1 : 0;
		bool zero = b->smin <= 0 && b->smax >= 0; /* divisor 0: the dividend itself */
		r->smin = a->smin >= 0 ? 0 : zero ? a->smin : max_s(a->smin, -lim);
		r->smax = a->smax <= 0 ? 0 : zero ? a->smax : min_s(a->smax, lim);
		return;
	}
	int64_t lo = INT64_MAX, hi = INT64_MIN, l, h;
	if (b->smin <= 0 && b->smax >= 0) { /* divisor 0 gives 0 */
		lo = 0;
		hi = 0;
	}
	if (b->smin <= -1) {
		if (!sdiv_corners(a, b->smin, min_s(b->smax, -1), w, &l, &h))
			return;
		lo = min_s(lo, l);
		hi = max_s(hi, h);
	}
	if (b->smax >= 1) {
		if (!sdiv_corners(a, max_s(b->smin, 1), b->smax, w, &l, &h))
			return;
		lo = min_s(lo, l);
		hi = max_s(hi, h);
	}
	if (lo <= hi) {
		r->smin = lo;
		r->smax = hi;
	}
}

bool sc_alu(struct vscalar *dst, const struct vscalar *src, uint8_t op, bool alu32, int16_t off)
{
	int w = alu32 ? 32 : 64;
	bool signed_divmod = (op == BPF_DIV || op == BPF_MOD) && off == 1;
	if (op == BPF_MOV) {
		if (off == 0) {
			*dst = *src;
		} else if (sc_is_const(src)) {
			sc_const(dst, alu_concrete(0, src->t.value, op, alu32, off));
		} else {
			struct vscalar s = *src;
			int64_t lo = -(int64_t)(1ull << (off - 1)), hi = (int64_t)((1ull << (off - 1)) - 1);
			if (!(s.smin >= lo && s.smax <= hi)) {
				sc_unknown(&s);
				s.smin = lo;
				s.smax = hi;
			}
			*dst = s;
			sc_sync(dst);
		}
		if (alu32)
			sc_zext32(dst);
		return sc_sync(dst) || true;
	}
	if (op == BPF_NEG) {
		struct vscalar zero;
		sc_const(&zero, 0);
		struct vscalar a = *dst;
		*dst = zero;
		return sc_alu(dst, &a, BPF_SUB, alu32, 0);
	}
	if (sc_is_const(dst) && sc_is_const(src)) {
		sc_const(dst, alu_concrete(dst->t.value, src->t.value, op, alu32, off));
		return true;
	}
	bool b_const = tnum_is_const(t_get(src, w));
	unsigned k = (unsigned)(t_get(src, w).value & (uint64_t)(w - 1));
	struct vscalar r;
	sc_unknown(&r);
	if (signed_divmod) {
		struct wb a = wb_get(dst, w), b = wb_get(src, w), res;
		wb_sdivmod(&res, &a, &b, op, w);
		if (alu32) {
			r.t = tnum_subreg(r.t);
			wb_put(&r, 32, &res);
			if (!sc_sync(&r))
				sc_unknown(&r);
			sc_zext32(&r);
		} else {
			wb_put(&r, 64, &res);
		}
		*dst = r;
		if (!sc_sync(dst))
			sc_unknown(dst);
		return true;
	}
	struct wb a = wb_get(dst, w), b = wb_get(src, w), res;
	wb_alu(&res, &a, &b, op, w, b_const, k);
	r.t = t_alu(t_get(dst, w), t_get(src, w), op, w, b_const, k);
	if (alu32) {
		wb_put(&r, 32, &res);
		r.t = tnum_subreg(r.t);
		if (!sc_sync(&r)) /* cannot happen for sound inputs; stay conservative */
			sc_unknown(&r);
		sc_zext32(&r);
	} else {
		wb_put(&r, 64, &res);
		/* the low half of add/sub/mul/and/or/xor only depends on the low halves */
		if (op == BPF_ADD || op == BPF_SUB || op == BPF_MUL || op == BPF_AND ||
		    op == BPF_OR || op == BPF_XOR) {
			struct wb a32 = wb_get(dst, 32), b32 = wb_get(src, 32), r32;
			wb_alu(&r32, &a32, &b32, op, 32, false, 0);
			wb_put(&r, 32, &r32);
		}
	}
	*dst = r;
	if (!sc_sync(dst))
		sc_unknown(dst);
	return true;
}

void sc_end(struct vscalar *dst, unsigned bits, bool swap)
{
	if (sc_is_const(dst)) {
		uint64_t v = dst->t.value;
		if (swap) {
			if (bits == 16) v = __builtin_bswap16((uint16_t)v);
			else if (bits == 32) v = __builtin_bswap32((uint32_t)v);
			else v = __builtin_bswap64(v);
		}
		sc_const(dst, bits == 64 ? v : v & ((1ull << bits) - 1));
		return;
	}
	if (swap || bits < 64) {
		struct vscalar r;
		sc_unknown_sized(&r, bits / 8, false);
		if (!swap && bits < 64) {
			r.t = tnum_cast(dst->t, bits / 8);
			if (dst->umax <= (1ull << bits) - 1) { /* truncation keeps the value */
				r.umin = dst->umin;
				r.umax = dst->umax;
			}
		}
		*dst = r;
		if (!sc_sync(dst))
			sc_unknown_sized(dst, bits / 8, false);
	}
}

/* ---- branches ---- */

static uint8_t negate_op(uint8_t op)
{
	switch (op) {
	case BPF_JEQ: return BPF_JNE;
	case BPF_JNE: return BPF_JEQ;
	case BPF_JGT: return BPF_JLE;
	case BPF_JLE: return BPF_JGT;
	case BPF_JGE: return BPF_JLT;
	case BPF_JLT: return BPF_JGE;
	case BPF_JSGT: return BPF_JSLE;
	case BPF_JSLE: return BPF_JSGT;
	case BPF_JSGE: return BPF_JSLT;
	case BPF_JSLT: return BPF_JSGE;
	case BPF_JSET: return 0xff; /* "and is zero" */
	default: return BPF_JSET;
	}
}

/* x > y (or >= when ge) on unsigned bounds */
static bool narrow_ugt(struct wb *x, struct wb *y, bool ge, int w)
{
	uint64_t ymin = y->umin, xmax = x->umax;
	if (!ge) {
		if (ymin == w_umax(w) || xmax == 0)
			return false;
		ymin++;
		xmax--;
	}
	x->umin = max_u(x->umin, ymin);
	y->umax = min_u(y->umax, xmax);
	return x->umin <= x->umax && y->umin <= y->umax;
}

static bool narrow_sgt(struct wb *x, struct wb *y, bool ge, int w)
{
	int64_t ymin = y->smin, xmax = x->smax;
	if (!ge) {
		if (ymin == w_smax(w) || xmax == w_smin(w))
			return false;
		ymin++;
		xmax--;
	}
	x->smin = max_s(x->smin, ymin);
	y->smax = min_s(y->smax, xmax);
	return x->smin <= x->smax && y->smin <= y->smax;
}

static bool narrow_ne(struct wb *x, struct tnum tx, const struct wb *y, struct tnum ty)
{
	if (!tnum_is_const(ty))
		return true;
	uint64_t c = ty.value;
	if (tnum_is_const(tx))
		return tx.value != c;
	/* x is not constant here, so umin < umax and smin < smax: no overflow */
	if (x->umin == c && x->umin < x->umax) x->umin++;
	else if (x->umax == c && x->umax > x->umin) x->umax--;
	int64_t sc = y->smin; /* y is constant: smin == its signed value */
	if (x->smin == sc && x->smin < x->smax) x->smin++;
	else if (x->smax == sc && x->smax > x->smin) x->smax--;
	return x->umin <= x->umax && x->smin <= x->smax;
}

/* Narrows x OP y at width w. Returns false if no values satisfy it. */
static bool narrow(struct vscalar *xs, struct vscalar *ys, uint8_t op, int w)
{
	struct wb x = wb_get(xs, w), y = wb_get(ys, w);
	struct tnum tx = t_get(xs, w), ty = t_get(ys, w), t;
	bool ok = true;
	switch (op) {
	case BPF_JEQ:
		x.umin = y.umin = max_u(x.umin, y.umin);
		x.umax = y.umax = min_u(x.umax, y.umax);
		x.smin = y.smin = max_s(x.smin, y.smin);
		x.smax = y.smax = min_s(x.smax, y.smax);
		if (!tnum_intersect(tx, ty, &t))
			return false;
		tx = ty = t;
		break;
	case BPF_JNE:
		ok = narrow_ne(&x, tx, &y, ty) && narrow_ne(&y, ty, &x, tx);
		break;
	case BPF_JGT: ok = narrow_ugt(&x, &y, false, w); break;
	case BPF_JGE: ok = narrow_ugt(&x, &y, true, w); break;
	case BPF_JLT: ok = narrow_ugt(&y, &x, false, w); break;
	case BPF_JLE: ok = narrow_ugt(&y, &x, true, w); break;
	case BPF_JSGT: ok = narrow_sgt(&x, &y, false, w); break;
	case BPF_JSGE: ok = narrow_sgt(&x, &y, true, w); break;
	case BPF_JSLT: ok = narrow_sgt(&y, &x, false, w); break;
	case BPF_JSLE: ok = narrow_sgt(&y, &x, true, w); break;
	case BPF_JSET:
		if (((tx.value | tx.mask) & (ty.value | ty.mask)) == 0)
			return false;
		if (tnum_is_const(ty) && __builtin_popcountll(ty.value) == 1) {
			tx.value |= ty.value;
			tx.mask &= ~ty.value;
		}
		break;
	case 0xff: /* x & y == 0 */
		if (tx.value & ty.value)
			return false;
		if (tnum_is_const(ty)) {
			tx.value &= ~ty.value;
			tx.mask &= ~ty.value;
		}
		break;
	default:
		break;
	}
	if (!ok)
		return false;
	wb_put(xs, w, &x);
	wb_put(ys, w, &y);
	if (w == 64) {
		xs->t = tx;
		ys->t = ty;
	} else {
		xs->t = tnum_with_subreg(xs->t, tx);
		ys->t = tnum_with_subreg(ys->t, ty);
	}
	return sc_sync(xs) && sc_sync(ys);
}

int sc_branch(const struct vscalar *a, const struct vscalar *b, uint8_t op, bool jmp32,
	      struct vscalar *ta, struct vscalar *tb, struct vscalar *fa, struct vscalar *fb)
{
	int w = jmp32 ? 32 : 64, res = 0;
	*ta = *a; *tb = *b; *fa = *a; *fb = *b;
	if (narrow(ta, tb, op, w))
		res |= SC_TAKEN;
	if (narrow(fa, fb, negate_op(op), w))
		res |= SC_FALL;
	return res;
}

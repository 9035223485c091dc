/* Scalar domain soundness against concrete execution on random values: for random
 * abstract values built around concrete members, every ALU transfer function, byte swap,
 * branch refinement and sc_sync() must keep the concrete results inside the abstract ones.
 * Usage: test_verifier_scalar [iterations]  (CI: a short budget) */
#include <stdlib.h>

#include "test_util.h"
#include "verifier/verifier_internal.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint64_t interesting(void)
{
	static const uint64_t edge[] = { 0, 1, 2, 3, 7, 8, 15, 16, 63, 64, 0x7f, 0x80, 0xff, 0x100,
					 0x7fff, 0x8000, 0xffff, 0x7fffffff, 0x80000000, 0xffffffff,
					 0x100000000ull, 0x7fffffffffffffffull, 0x8000000000000000ull };
	switch (rnd() % 6) {
	case 0: return rnd();
	case 1: return rnd() % 64;
	case 2: return (uint64_t) - (int64_t)(rnd() % 64);
	case 3: return edge[rnd() % (sizeof(edge) / sizeof(edge[0]))] + (rnd() % 5) - 2;
	case 4: return rnd() & 0xffffffff;
	default: return edge[rnd() % (sizeof(edge) / sizeof(edge[0]))];
	}
}

static uint64_t below(uint64_t x) /* a value <= x */
{
	uint64_t d = rnd() % 4 == 0 ? rnd() : rnd() % 100;
	return d > x ? 0 : x - d;
}
static uint64_t above(uint64_t x)
{
	uint64_t d = rnd() % 4 == 0 ? rnd() : rnd() % 100;
	return d > ~0ull - x ? ~0ull : x + d;
}
static int64_t sbelow(int64_t x)
{
	int64_t d = (int64_t)(rnd() % 100), r;
	return __builtin_sub_overflow(x, d, &r) ? INT64_MIN : r;
}
static int64_t sabove(int64_t x)
{
	int64_t d = (int64_t)(rnd() % 100), r;
	return __builtin_add_overflow(x, d, &r) ? INT64_MAX : r;
}

/* A random abstract value containing x (not yet synced). */
static void random_abs(struct vscalar *s, uint64_t x)
{
	sc_unknown(s);
	if (rnd() & 1) { s->umin = below(x); s->umax = above(x); }
	if (rnd() & 1) { s->smin = sbelow((int64_t)x); s->smax = sabove((int64_t)x); }
	if (rnd() & 1) {
		uint32_t x32 = (uint32_t)x, d1 = (uint32_t)(rnd() % 50), d2 = (uint32_t)(rnd() % 50);
		s->u32min = d1 > x32 ? 0 : x32 - d1;
		s->u32max = d2 > UINT32_MAX - x32 ? UINT32_MAX : x32 + d2;
	}
	if (rnd() & 1) {
		int32_t v = (int32_t)(uint32_t)x;
		s->s32min = v < INT32_MIN + 64 ? INT32_MIN : v - (int32_t)(rnd() % 64);
		s->s32max = v > INT32_MAX - 64 ? INT32_MAX : v + (int32_t)(rnd() % 64);
	}
	if (rnd() & 1) {
		uint64_t m = rnd() % 3 == 0 ? rnd() : (rnd() % 2 ? 0xff : (1ull << (rnd() % 64)) - 1);
		s->t.mask = m;
		s->t.value = x & ~m;
	}
	if (rnd() % 8 == 0)
		sc_const(s, x);
}

/* Another member of s (pre-sync constraints), or x itself. */
static uint64_t member(const struct vscalar *s, uint64_t x)
{
	for (int i = 0; i < 20; i++) {
		uint64_t y = (x & ~s->t.mask) | (rnd() & s->t.mask);
		if (rnd() % 3 == 0)
			y = (x & ~s->t.mask) | (((x & s->t.mask) + (rnd() % 5) - 2) & s->t.mask);
		if (sc_contains(s, y))
			return y;
	}
	return x;
}

static uint64_t sx(uint64_t v, unsigned bits)
{
	if (bits >= 64)
		return v;
	uint64_t m = 1ull << (bits - 1);
	v &= (1ull << bits) - 1;
	return (v ^ m) - m;
}

/* Reference semantics (RFC 9669), written independently of the verifier. */
static uint64_t concrete_alu(uint64_t a, uint64_t b, uint8_t op, bool alu32, int16_t off)
{
	if (alu32) {
		uint32_t x = (uint32_t)a, y = (uint32_t)b, r;
		switch (op) {
		case BPF_ADD: r = x + y; break;
		case BPF_SUB: r = x - y; break;
		case BPF_MUL: r = x * y; break;
		case BPF_DIV:
			if (off) r = y == 0 ? 0 : ((int32_t)y == -1 ? (uint32_t)0 - x : (uint32_t)((int32_t)x / (int32_t)y));
			else r = y ? x / y : 0;
			break;
		case BPF_MOD:
			if (off) r = y == 0 ? x : ((int32_t)y == -1 ? 0 : (uint32_t)((int32_t)x % (int32_t)y));
			else r = y ? x % y : x;
			break;
		case BPF_OR: r = x | y; break;
		case BPF_AND: r = x & y; break;
		case BPF_XOR: r = x ^ y; break;
		case BPF_LSH: r = x << (y & 31); break;
		case BPF_RSH: r = x >> (y & 31); break;
		case BPF_ARSH: r = (uint32_t)((int32_t)x >> (y & 31)); break;
		case BPF_NEG: r = (uint32_t)0 - x; break;
		case BPF_MOV: r = off ? (uint32_t)sx(y, (unsigned)off) : y; break;
		default: r = 0;
		}
		return r;
	}
	switch (op) {
	case BPF_ADD: return a + b;
	case BPF_SUB: return a - b;
	case BPF_MUL: return a * b;
	case BPF_DIV:
		if (off) return b == 0 ? 0 : ((int64_t)b == -1 ? 0 - a : (uint64_t)((int64_t)a / (int64_t)b));
		return b ? a / b : 0;
	case BPF_MOD:
		if (off) return b == 0 ? a : ((int64_t)b == -1 ? 0 : (uint64_t)((int64_t)a % (int64_t)b));
		return b ? a % b : a;
	case BPF_OR: return a | b;
	case BPF_AND: return a & b;
	case BPF_XOR: return a ^ b;
	case BPF_LSH: return a << (b & 63);
	case BPF_RSH: return a >> (b & 63);
	case BPF_ARSH: return (uint64_t)((int64_t)a >> (b & 63));
	case BPF_NEG: return 0 - a;
	case BPF_MOV: return off ? sx(b, (unsigned)off) : b;
	default: return 0;
	}
}

static bool concrete_jmp(uint64_t a, uint64_t b, uint8_t op, bool j32)
{
	if (j32) {
		a = (uint32_t)a;
		b = (uint32_t)b;
	}
	int64_t sa = j32 ? (int32_t)(uint32_t)a : (int64_t)a, sb = j32 ? (int32_t)(uint32_t)b : (int64_t)b;
	switch (op) {
	case BPF_JEQ: return a == b;
	case BPF_JNE: return a != b;
	case BPF_JGT: return a > b;
	case BPF_JGE: return a >= b;
	case BPF_JLT: return a < b;
	case BPF_JLE: return a <= b;
	case BPF_JSGT: return sa > sb;
	case BPF_JSGE: return sa >= sb;
	case BPF_JSLT: return sa < sb;
	case BPF_JSLE: return sa <= sb;
	case BPF_JSET: return (a & b) != 0;
	default: return false;
	}
}

static int fails;
static void report(const char *what, uint64_t a, uint64_t b, int op, int w, const struct vscalar *s)
{
	if (++fails > 10)
		return;
	fprintf(stderr, "%s: a=%#llx b=%#llx op=%#x w=%d -> u[%#llx,%#llx] s[%lld,%lld] u32[%#x,%#x] "
		"s32[%d,%d] t=%#llx/%#llx\n", what, (unsigned long long)a, (unsigned long long)b, op, w,
		(unsigned long long)s->umin, (unsigned long long)s->umax, (long long)s->smin,
		(long long)s->smax, s->u32min, s->u32max, s->s32min, s->s32max,
		(unsigned long long)s->t.value, (unsigned long long)s->t.mask);
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 100000;
	static const uint8_t alu_ops[] = { BPF_ADD, BPF_SUB, BPF_MUL, BPF_DIV, BPF_MOD, BPF_OR,
					   BPF_AND, BPF_XOR, BPF_LSH, BPF_RSH, BPF_ARSH, BPF_NEG,
					   BPF_MOV };
	static const uint8_t jmp_ops[] = { BPF_JEQ, BPF_JNE, BPF_JGT, BPF_JGE, BPF_JLT, BPF_JLE,
					   BPF_JSGT, BPF_JSGE, BPF_JSLT, BPF_JSLE, BPF_JSET };
	long syncs = 0, alus = 0, jmps = 0, infeasible_ok = 0;
	for (long it = 0; it < iters; it++) {
		uint64_t x = interesting(), y = interesting();
		struct vscalar a, b, a0;
		random_abs(&a, x);
		random_abs(&b, y);
		/* sync keeps every member */
		a0 = a;
		uint64_t x2 = member(&a0, x);
		if (!sc_sync(&a) || !sc_contains(&a, x) || !sc_contains(&a, x2))
			report("sync", x, x2, 0, 0, &a);
		if (!sc_sync(&b) || !sc_contains(&b, y))
			report("sync", y, 0, 0, 0, &b);
		syncs++;
		x = member(&a, x);
		y = member(&b, y);
		/* ALU */
		uint8_t op = alu_ops[rnd() % sizeof(alu_ops)];
		bool alu32 = rnd() & 1;
		int16_t off = 0;
		if ((op == BPF_DIV || op == BPF_MOD) && (rnd() & 1))
			off = 1;
		if (op == BPF_MOV && (rnd() & 1)) {
			static const int16_t w[] = { 8, 16, 32 };
			off = w[rnd() % (alu32 ? 2 : 3)];
		}
		struct vscalar r = a;
		sc_alu(&r, &b, op, alu32, off);
		uint64_t c = concrete_alu(x, y, op, alu32, off);
		if (!sc_contains(&r, c))
			report("alu", x, y, op | (off << 8), alu32 ? 32 : 64, &r);
		alus++;
		/* byte swap / truncation */
		{
			static const unsigned bits[] = { 16, 32, 64 };
			unsigned bw = bits[rnd() % 3];
			bool swap = rnd() & 1;
			struct vscalar e = a;
			sc_end(&e, bw, swap);
			uint64_t v = x;
			if (swap)
				v = bw == 16 ? __builtin_bswap16((uint16_t)v) : bw == 32 ? __builtin_bswap32((uint32_t)v) : __builtin_bswap64(v);
			else if (bw < 64)
				v &= (1ull << bw) - 1;
			if (!sc_contains(&e, v))
				report("end", x, bw, swap, 0, &e);
		}
		/* branches */
		uint8_t jop = jmp_ops[rnd() % sizeof(jmp_ops)];
		bool j32 = rnd() & 1;
		struct vscalar ta, tb, fa, fb;
		int feas = sc_branch(&a, &b, jop, j32, &ta, &tb, &fa, &fb);
		bool taken = concrete_jmp(x, y, jop, j32);
		if (taken) {
			if (!(feas & SC_TAKEN) || !sc_contains(&ta, x) || !sc_contains(&tb, y))
				report("jmp-taken", x, y, jop, j32 ? 32 : 64, &ta);
		} else {
			if (!(feas & SC_FALL) || !sc_contains(&fa, x) || !sc_contains(&fb, y))
				report("jmp-fall", x, y, jop, j32 ? 32 : 64, &fa);
		}
		if (feas != (SC_TAKEN | SC_FALL))
			infeasible_ok++;
		jmps++;
	}
	/* tnum arithmetic: exhaustive on all 3-valued 4-bit patterns */
	long tn = 0;
	for (unsigned am = 0; am < 16; am++)
		for (unsigned av = 0; av < 16; av++) {
			if (av & am) continue;
			for (unsigned bm = 0; bm < 16; bm++)
				for (unsigned bv = 0; bv < 16; bv++) {
					if (bv & bm) continue;
					struct tnum ta = { av, am }, tb = { bv, bm };
					for (unsigned i = 0; i < 16; i++) {
						if (!tnum_contains(ta, i)) continue;
						for (unsigned j = 0; j < 16; j++) {
							if (!tnum_contains(tb, j)) continue;
							tn++;
							if (!tnum_contains(tnum_add(ta, tb), (uint64_t)i + j) ||
							    !tnum_contains(tnum_sub(ta, tb), (uint64_t)i - j) ||
							    !tnum_contains(tnum_mul(ta, tb), (uint64_t)i * j) ||
							    !tnum_contains(tnum_and(ta, tb), i & j) ||
							    !tnum_contains(tnum_or(ta, tb), i | j) ||
							    !tnum_contains(tnum_xor(ta, tb), i ^ j))
								report("tnum", i, j, 0, 4, &(struct vscalar){ .t = ta });
						}
					}
				}
		}
	/* the shortcuts of sc_sync and sc_unknown_sized give what the full deduction gives:
	 * the fully unknown number is a fixpoint of sync_round, and a zero-extended unknown of
	 * 1, 2 or 4 bytes equals the unknown with the tnum and unsigned maximum of its width,
	 * synced (the rounds run for those) */
	{
		struct vscalar u, v;
		sc_unknown(&u);
		v = u;
		v.umin = 1; /* not the shortcut's shape: the rounds run */
		CHECK(sc_sync(&v) && v.umin == 1 && v.t.mask == ~0ull && v.umax == ~0ull);
		CHECK(sc_sync(&u) && sc_equal(&u, &(struct vscalar){ .t = { 0, ~0ull }, .umax = ~0ull,
				.smin = INT64_MIN, .smax = INT64_MAX, .u32max = UINT32_MAX,
				.s32min = INT32_MIN, .s32max = INT32_MAX }));
		for (unsigned bytes = 1; bytes <= 4; bytes *= 2) {
			struct vscalar d, f;
			sc_unknown_sized(&d, bytes, false);
			sc_unknown(&f);
			f.t = tnum_cast(f.t, bytes);
			f.umax = (1ull << (8 * bytes)) - 1; /* not the full range: the rounds run */
			CHECK(sc_sync(&f));
			CHECK(sc_equal(&d, &f));
			if (!sc_equal(&d, &f))
				report("unknown_sized", bytes, 0, 0, 0, &d);
		}
	}
	CHECK(fails == 0);
	CHECK(tn > 10000);
	CHECK(infeasible_ok > 0); /* the random values do exercise decided branches */
	printf("scalar domain: %ld syncs, %ld alu ops, %ld branches (%ld decided), %ld tnum pairs, "
	       "%d unsound results\n", syncs, alus, jmps, infeasible_ok, tn, fails);
	TEST_DONE();
}

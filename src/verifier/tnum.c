/* tnum: tracked numbers (known bits), the bit-level half of the scalar domain.
 * A tnum (value, mask) stands for every v with (v & ~mask) == value; value & mask == 0.
 * The arithmetic follows the published construction (Vishwanathan et al., CGO'22).
 */
#include "verifier/verifier_internal.h"

struct tnum tnum_add(struct tnum a, struct tnum b)
{
	uint64_t sm = a.mask + b.mask;
	uint64_t sv = a.value + b.value;
	uint64_t sigma = sm + sv;
	uint64_t chi = sigma ^ sv;
	uint64_t mu = chi | a.mask | b.mask;
	return (struct tnum){ sv & ~mu, mu };
}

struct tnum tnum_sub(struct tnum a, struct tnum b)
{
	uint64_t dv = a.value - b.value;
	uint64_t alpha = dv + a.mask;
	uint64_t beta = dv - b.mask;
	uint64_t chi = alpha ^ beta;
	uint64_t mu = chi | a.mask | b.mask;
	return (struct tnum){ dv & ~mu, mu };
}

struct tnum tnum_and(struct tnum a, struct tnum b)
{
	uint64_t alpha = a.value | a.mask;
	uint64_t beta = b.value | b.mask;
	uint64_t v = a.value & b.value;
	return (struct tnum){ v, alpha & beta & ~v };
}

struct tnum tnum_or(struct tnum a, struct tnum b)
{
	uint64_t v = a.value | b.value;
	uint64_t mu = a.mask | b.mask;
	return (struct tnum){ v, mu & ~v };
}

struct tnum tnum_xor(struct tnum a, struct tnum b)
{
	uint64_t v = a.value ^ b.value;
	uint64_t mu = a.mask | b.mask;
	return (struct tnum){ v & ~mu, mu };
}

/* Shift-and-add multiplication over the known/unknown bits of a. */
struct tnum tnum_mul(struct tnum a, struct tnum b)
{
	struct tnum acc_v = tnum_const(a.value * b.value);
	struct tnum acc_m = tnum_const(0);
	while (a.value || a.mask) {
		if (a.value & 1)
			acc_m = tnum_add(acc_m, (struct tnum){ 0, b.mask });
		else if (a.mask & 1)
			acc_m = tnum_add(acc_m, (struct tnum){ 0, b.value | b.mask });
		a = tnum_rshift(a, 1);
		b = tnum_lshift(b, 1);
	}
	return tnum_add(acc_v, acc_m);
}

struct tnum tnum_lshift(struct tnum a, unsigned k)
{
	if (k >= 64)
		return tnum_const(0);
	return (struct tnum){ a.value << k, a.mask << k };
}

struct tnum tnum_rshift(struct tnum a, unsigned k)
{
	if (k >= 64)
		return tnum_const(0);
	return (struct tnum){ a.value >> k, a.mask >> k };
}

/* Arithmetic shift within `width` (32 or 64) bits; the result is zero-extended above. */
struct tnum tnum_arshift(struct tnum a, unsigned k, unsigned width)
{
	if (width == 32) {
		int32_t v = (int32_t)(uint32_t)a.value, m = (int32_t)(uint32_t)a.mask;
		k &= 31;
		return (struct tnum){ (uint32_t)(v >> k), (uint32_t)(m >> k) };
	}
	k &= 63;
	return (struct tnum){ (uint64_t)((int64_t)a.value >> k), (uint64_t)((int64_t)a.mask >> k) };
}


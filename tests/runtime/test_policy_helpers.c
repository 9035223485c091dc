/* The policy SDK's branch-free arithmetic (include/ncclbpf/policy.h): ncclbpf_size_bucket,
 * NCCLBPF_NZ, NCCLBPF_LT and NCCLBPF_SEL against plain C over the edges of the 64-bit range
 * (0, 1, every 2^k - 1, 2^k, 2^k + 1, UINT64_MAX) and random values. The profiler computes
 * the latency map's bucket with the same function the policies use, so both sides must
 * agree with floor(log2(n)). */
#include <stdint.h>

#include "ncclbpf/policy.h"
#include "test_util.h"

static uint32_t ref_bucket(uint64_t n)
{
	uint32_t b = 0;
	while (n > 1) {
		n >>= 1;
		b++;
	}
	return b;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(void)
{
	uint64_t edges[3 * 64 + 3];
	size_t ne = 0;
	edges[ne++] = 0;
	edges[ne++] = UINT64_MAX;
	edges[ne++] = UINT64_MAX - 1;
	for (int k = 0; k < 64; k++) {
		uint64_t p = 1ull << k;
		edges[ne++] = p - 1;
		edges[ne++] = p;
		edges[ne++] = p + 1;
	}
	long bad = 0;
	for (size_t i = 0; i < ne; i++) {
		bad += ncclbpf_size_bucket(edges[i]) != ref_bucket(edges[i]);
		bad += NCCLBPF_NZ(edges[i]) != (edges[i] != 0);
		for (size_t j = 0; j < ne; j++) {
			uint64_t a = edges[i], b = edges[j];
			bad += NCCLBPF_LT(a, b) != (a < b);
			bad += NCCLBPF_SEL(a < b, a, b) != (a < b ? a : b);
		}
	}
	for (int i = 0; i < 200000; i++) {
		uint64_t a = next() >> (next() & 63), b = next() >> (next() & 63);
		bad += ncclbpf_size_bucket(a) != ref_bucket(a);
		bad += NCCLBPF_LT(a, b) != (a < b);
		bad += NCCLBPF_SEL(NCCLBPF_LT(b, a), a, b) != (a > b ? a : b);
	}
	CHECK_EQ_U64(bad, 0);
	TEST_DONE();
}

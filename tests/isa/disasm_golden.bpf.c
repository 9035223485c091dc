/* Restricted C compiled by clang for the disassembler golden test: its only purpose is to
 * make clang emit many different instruction forms (loads/stores of every size, ALU32 and
 * ALU64, branches, helper and local calls, map references, atomics, byte swaps). */
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;

#define SEC(n) __attribute__((section(n), used))

struct map_def {
	int type;
	int max;
} stats_map SEC(".maps");

static void *(*lookup)(void *map, const void *key) = (void *)1;
static uint64_t (*ktime)(void) = (void *)5;

static __attribute__((noinline)) uint64_t mix(uint64_t a, uint32_t b)
{
	uint64_t x = a * 31 + b;
	x ^= x >> 17;
	x |= (uint64_t)b << 40;
	return x / (b | 1) + x % 7;
}

static __attribute__((noinline)) int32_t narrow(int32_t v, uint8_t s, int16_t h)
{
	int32_t r = v >> (s & 31);
	r -= h;
	return r < -5 ? -r : r & 0xff0;
}

SEC("tuner") int golden(uint64_t *ctx)
{
	uint32_t key = (uint32_t)ctx[1];
	uint64_t *val = lookup(&stats_map, &key);
	volatile uint8_t b[8];
	volatile uint16_t h = (uint16_t)ctx[2];
	if (!val)
		return -1;
	__sync_fetch_and_add(val, 1);
	uint64_t old = __sync_fetch_and_add(val + 1, 3);
	__sync_fetch_and_or(val + 2, 4);
	b[0] = (uint8_t)old;
	b[3] = (uint8_t)ctx[0];
	uint64_t t = ktime();
	if (t > 1000000)
		t -= 77;
	if ((int64_t)t < -3)
		t = 0;
	uint64_t m = mix(t, (uint32_t)ctx[3]);
	ctx[4] = __builtin_bswap64(m);
	ctx[5] = __builtin_bswap32((uint32_t)m) + __builtin_bswap16(h);
	ctx[6] = 0x123456789abcdefull ^ b[3];
	*(uint32_t *)&ctx[7] = (uint32_t)narrow((int32_t)ctx[0], b[0], (int16_t)h);
	*(volatile uint16_t *)&ctx[8] = 7;
	for (int i = 0; i < 4 && ctx[i] != 9; i++)
		ctx[9] += ctx[i] << i;
	return (int)(m >> 3) == 12 ? 1 : 0;
}

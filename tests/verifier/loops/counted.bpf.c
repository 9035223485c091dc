/* Counted loops with constant bounds: for, while, do-while, countdown, steps, counter
 * widths, early exits. EXPECT: accept MIN MAX bounds the proven max_insns. */
#include "loops.h"

/* EXPECT: accept 1000 20000 */
SEC("profiler") int for_1000(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u32 i = 0; i < 1000; i++)
		BUMP(i);
	return 0;
}

/* 100,000 iterations of 14 (v3) or 17 (v1/v2: they compare a zero-extended copy of the
 * counter) instructions: over the profiler's 10^6 per run, E-COST once widened. */
/* EXPECT: E-COST */
SEC("profiler") int for_100k(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u32 i = 0; i < 100000; i++)
		BUMP(i & 1023);
	return 0;
}

/* EXPECT: accept 1000 20000 */
SEC("profiler") int while_1000(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 i = 0;
	while (i < 1000) {
		BUMP(i);
		i++;
	}
	return 0;
}

/* EXPECT: accept 1000 20000 */
SEC("profiler") int do_while_1000(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 i = 0;
	do {
		BUMP(i);
	} while (++i < 1000);
	return 0;
}

/* EXPECT: accept 1000 20000 */
SEC("profiler") int countdown_1000(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u32 i = 1000; i > 0; i--)
		BUMP(i - 1);
	return 0;
}

/* EXPECT: accept 1000 20000 */
SEC("profiler") int countdown_signed(struct ncclbpf_profiler_ctx *ctx)
{
	for (int i = 999; i >= 0; i--)
		BUMP((__u32)i);
	return 0;
}

/* EXPECT: accept 500 20000 */
SEC("profiler") int step_2(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u32 i = 0; i < 1000; i += 2)
		BUMP(i);
	return 0;
}

/* EXPECT: accept 250 20000 */
SEC("profiler") int step_4(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u32 i = 0; i < 1000; i += 4)
		BUMP(i);
	return 0;
}

/* EXPECT: accept 1000 20000 */
SEC("profiler") int counter_u64(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u64 i = 0; i < 1000; i++)
		BUMP((__u32)i);
	return 0;
}

/* EXPECT: accept 200 10000 */
SEC("profiler") int counter_u8(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u8 i = 0; i < 200; i++)
		BUMP(i);
	return 0;
}

/* EXPECT: accept 1000 20000 */
SEC("profiler") int early_break(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 i;
	for (i = 0; i < 1000; i++) {
		__u64 *v = bpf_map_lookup_elem(&counts, &i);
		if (v && *v == ctx->n_bytes)
			break;
	}
	return i;
}

/* clang -O1 copies a register it never set on the first iteration (the value is dead, but
 * Linux refuses the read as well). */
/* EXPECT(v1-O1): E-UNINIT-REG */
/* EXPECT(v2-O1): E-UNINIT-REG */
/* EXPECT(v3-O1): E-UNINIT-REG */
/* EXPECT: accept 1000 20000 */
SEC("profiler") int early_return(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u32 i = 0; i < 1000; i++) {
		__u64 *v = bpf_map_lookup_elem(&counts, &i);
		if (!v)
			return -1;
		if (*v > ctx->seq)
			return i;
	}
	return 1000;
}

/* EXPECT: accept 1000 40000 */
SEC("profiler") int with_continue(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 sum = 0;
	for (__u32 i = 0; i < 1000; i++) {
		if ((i ^ ctx->seq) & 1)
			continue;
		__u64 *v = bpf_map_lookup_elem(&counts, &i);
		if (v)
			sum += *v;
	}
	return sum & 1;
}

/* EXPECT: accept 1000 20000 */
SEC("profiler") int two_counters(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 j = 0;
	for (__u32 i = 0; i < 1000; i++) {
		BUMP(j & 1023);
		j += 3;
	}
	return 0;
}

/* EXPECT: accept 1000 20000 */
SEC("profiler") int compound_condition(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 sum = 0;
	for (__u32 i = 0; i < 1000 && sum < ctx->n_bytes; i++) {
		__u64 *v = bpf_map_lookup_elem(&counts, &i);
		if (v)
			sum += *v;
	}
	return sum & 1;
}

/* EXPECT: accept 10000 200000 */
SEC("profiler") int for_10k(struct ncclbpf_profiler_ctx *ctx)
{
	for (__u32 i = 0; i < 10000; i++)
		BUMP(i & 1023);
	return 0;
}

/* EXPECT: accept 1000 40000 */
SEC("profiler") int switch_body(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 acc = 0;
	for (__u32 i = 0; i < 1000; i++) {
		switch ((i + ctx->coll_type) & 3) {
		case 0: acc += ctx->n_bytes; break;
		case 1: acc ^= i; break;
		case 2: BUMP(i); break;
		default: acc >>= 1; break;
		}
	}
	return acc & 1;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* bpf_loop (helper 181): accepted programs, run by test_verifier_loop in the interpreter,
 * the checked interpreter and the JIT (results must be equal and as computed in C there).
 * Accepted by test_verifier_elf like every tests/progs/verifier_ object. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
} squares SEC(".maps");

struct acc { __u64 a[8]; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct acc);
} accs SEC(".maps");

struct sum_ctx { __u64 sum; __u64 calls; };

static int add_index(__u32 i, void *data)
{
	struct sum_ctx *c = data;
	c->sum += i;
	c->calls++;
	return 0;
}

/* context on the stack: sum of 0..99 = 4950, 100 calls */
SEC("profiler") int loop_stack_ctx(struct ncclbpf_profiler_ctx *ctx)
{
	struct sum_ctx c = {};
	long n = bpf_loop(100, add_index, &c, 0);
	return c.sum * 1000 + c.calls * 10 + (n == 100);
}

static int stop_at_ten(__u32 i, void *data)
{
	struct sum_ctx *c = data;
	c->calls++;
	return i == 10;
}

/* breaking early: 11 calls, bpf_loop returns 11 */
SEC("profiler") int loop_break(struct ncclbpf_profiler_ctx *ctx)
{
	struct sum_ctx c = {};
	long n = bpf_loop(1000, stop_at_ten, &c, 0);
	return n * 100 + c.calls;
}

static int fill_value(__u32 i, void *data)
{
	struct acc *v = data;
	v->a[i & 7] += i;
	v->sum += i;
	return 0;
}

/* context in a map value; the index is bounded by nr_loops (0..7) */
SEC("profiler") int loop_map_ctx(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 k = 0;
	struct acc *v = bpf_map_lookup_elem(&accs, &k);
	if (!v)
		return 0;
	__builtin_memset(v, 0, sizeof(*v));
	bpf_loop(8, fill_value, v, 0);
	return v->sum * 100 + v->a[7];
}

static int index_lookup(__u32 i, void *data)
{
	struct sum_ctx *c = data;
	__u64 *sq = bpf_map_lookup_elem(&squares, &i);
	if (sq)
		c->sum += *sq;
	return 0;
}

/* the index as a map key inside the callback; NULL context too */
static int count_nothing(__u32 i, void *data)
{
	return 0;
}

SEC("profiler") int loop_lookup(struct ncclbpf_profiler_ctx *ctx)
{
	struct sum_ctx c = {};
	bpf_loop(16, index_lookup, &c, 0);
	long z = bpf_loop(5, count_nothing, 0, 0);
	return c.sum + z * 100000;
}

static int count(__u32 i, void *data)
{
	struct sum_ctx *c = data;
	c->calls++;
	return 0;
}

/* a million iterations: verified once, runs 1,000,000 callbacks */
SEC("profiler") int loop_million(struct ncclbpf_profiler_ctx *ctx)
{
	struct sum_ctx c = {};
	bpf_loop(1000000, count, &c, 0);
	return c.calls;
}

/* nr_loops from the input: bounded only by the helper's cap; errors are results */
SEC("profiler") int loop_input_count(struct ncclbpf_profiler_ctx *ctx)
{
	struct sum_ctx c = {};
	long n = bpf_loop((__u32)ctx->n_bytes, count, &c, 0);
	long e = bpf_loop((1u << 23) + 1, count, &c, 0);
	return (n == (long)c.calls) + (e == -7 /* -E2BIG */) * 2;
}

struct search { __u64 limit; __u64 found; };

static int find_square(__u32 i, void *data)
{
	struct search *s = data;
	if (i >= s->limit)
		return 1;
	__u64 *sq = bpf_map_lookup_elem(&squares, &i);
	if (sq && *sq >= 50) {
		s->found = i;
		s->limit = i; /* rewrites the slot the caller's `lim` is linked to */
	}
	return 0;
}

/* A search that stops by lowering its limit, which the caller also keeps in a register:
 * the register and the slot are linked (a spill), the callback rewrites the slot.
 * Regression (issue 24): the join of the rounds kept the stale link, so the callback's
 * exit was never contained and the loop did not settle (E-BUDGET after 16 rounds).
 * n_bytes = 12: the first square >= 50 is 8*8, so 8 * 100 + 12; n_bytes = 5: 5. */
SEC("profiler") int loop_search_linked(struct ncclbpf_profiler_ctx *ctx)
{
	struct search s = { .limit = ctx->n_bytes, .found = 0 };
	__u64 lim = s.limit;
	bpf_loop(16, find_square, &s, 0);
	return s.found * 100 + lim;
}

/* a tuner decision from a rank-invariant loop */
SEC("tuner") int loop_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	struct sum_ctx c = {};
	bpf_loop(4, add_index, &c, 0);
	ctx->n_channels = c.sum + 2;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

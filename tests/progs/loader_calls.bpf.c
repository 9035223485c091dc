/* Loader test object, also executed end-to-end by tests/loader/test_loader_exec.c:
 * nested static subprograms, a global subprogram calling static ones, two programs in one
 * section sharing subprograms, a string literal in .rodata.str1.1, globals in every data
 * section and an array map. The test recomputes the expected results in C. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} bonus SEC(".maps");

const volatile __u32 scale = 3; /* .rodata */
__u64 counter = 10;             /* .data */
__u64 acc;                      /* .bss */

static __attribute__((noinline)) __u64 leaf(__u64 x)
{
	return x * scale + 1;
}

static __attribute__((noinline)) __u64 mid(__u64 x)
{
	return leaf(x) + leaf(x + 1);
}

__attribute__((noinline)) __u64 glob(__u64 x)
{
	return mid(x) ^ 0x55;
}

SEC("tuner")
int calls_a(struct ncclbpf_tuner_ctx *ctx)
{
	acc += ctx->n_bytes;
	counter++;
	ctx->algo = (int)(glob(ctx->n_bytes) & 0xff);
	return (int)mid(2);
}

SEC("tuner")
int calls_b(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 1;
	__u64 *b = bpf_map_lookup_elem(&bonus, &k);
	__u64 extra = b ? *b : 1000;

	return (int)(leaf(ctx->n_bytes) + counter + acc + extra);
}

SEC("profiler")
int strlit(struct ncclbpf_profiler_ctx *ctx)
{
	const char *s = "literal string";

	return s[ctx->coll_type & 7];
}

char LICENSE[] SEC("license") = "GPL";

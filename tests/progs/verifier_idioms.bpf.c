/* Everyday idioms that must verify (issue 14: each was rejected before). Accepted by
 * test_verifier_elf like every tests/progs/verifier_ object; run by test_verifier_idioms. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 32);
	__type(key, __u32);
	__type(value, __u64);
} per_bucket SEC(".maps");

struct row { __u64 a[16]; __u64 hits; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct row);
} rows SEC(".maps");

__u64 hist[16];

/* a 4-byte loop counter whose address is taken (the map key) lives in a 4-byte stack slot */
SEC("profiler") int counter_in_stack_slot(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 sum = 0;
	for (__u32 i = 0; i < 32; i++) {
		__u64 *v = bpf_map_lookup_elem(&per_bucket, &i);
		if (v)
			sum += *v;
	}
	return sum > ctx->n_bytes;
}

/* a pointer walks a map value: comparing two pointers into the same value narrows */
SEC("profiler") int pointer_loop(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 key = ctx->coll_type & 3;
	struct row *r = bpf_map_lookup_elem(&rows, &key);
	if (!r)
		return 0;
	__u64 sum = 0;
	for (__u64 *p = r->a; p < r->a + 16; p++)
		sum += *p;
	for (__u64 *p = hist; p < hist + 16; p++) /* global data: one object */
		*p += 1;
	__sync_fetch_and_add(&r->hits, 1); /* naturally aligned atomic */
	return sum & 1;
}

/* the index is reloaded from its stack slot after the bounds check (volatile: as at -O0,
 * or when the compiler runs out of registers) */
SEC("profiler") int reloaded_index(struct ncclbpf_profiler_ctx *ctx)
{
	volatile __u32 idx = ctx->size_bucket;
	__u32 key = 0;
	struct row *r = bpf_map_lookup_elem(&rows, &key);
	if (!r || idx >= 16)
		return 0;
	return r->a[idx] & 1;
}

/* bpf_printk with as many arguments as the format reads, and with none */
SEC("profiler") int printk_args(struct ncclbpf_profiler_ctx *ctx)
{
	bpf_printk("seq=%llu bytes=%llu", ctx->seq, ctx->n_bytes);
	bpf_printk("no arguments, 100%% literal");
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Safe twins of the subtle unsafe programs in policies/unsafe/: each differs from its
 * unsafe counterpart only by the fix, and must be accepted. */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

struct table { __u64 slots[64]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct table);
} table SEC(".maps");

/* twin of null_spill: the reloaded copy is checked before the dereference */
SEC("tuner") __attribute__((naked)) int null_spill_checked(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call 1;"
		     "*(u64 *)(r10 - 16) = r0;"
		     "r1 = *(u64 *)(r10 - 16);"
		     "if r1 == 0 goto +2;"
		     "r0 = *(u64 *)(r1 + 0);"
		     "exit;"
		     "r0 = 0;"
		     "exit;" :: [stats] "i"(&stats));
}

/* twin of null_copy: a copy is checked, the original is dereferenced */
SEC("tuner") __attribute__((naked)) int null_copy_checked(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call 1;"
		     "r6 = r0;"
		     "if r6 == 0 goto +2;"
		     "r0 = *(u64 *)(r0 + 8);"
		     "exit;"
		     "r0 = 0;"
		     "exit;" :: [stats] "i"(&stats));
}

/* twin of map_index_off_by_one: i < 64 */
SEC("tuner") int map_index_checked(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0, i = ctx->n_ranks;
	struct table *t = bpf_map_lookup_elem(&table, &key);
	if (!t || i >= 64)
		return 0;
	return t->slots[i];
}

/* twin of alu32_wrap: (x & 7) + 8 stays in 8..15 */
SEC("tuner") int alu32_no_wrap(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	struct table *t = bpf_map_lookup_elem(&table, &key);
	if (!t)
		return 0;
	__u32 i = (ctx->n_ranks & 7) + 8;
	return t->slots[i];
}

/* twin of jmp32_high_bits: the index is a zero-extended 32-bit load */
SEC("tuner") __attribute__((naked)) int jmp32_zero_extended(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r6 = *(u32 *)(r1 + 24);"
		     "r1 = 0; *(u32 *)(r10 - 4) = r1; r2 = r10; r2 += -4;"
		     "r1 = %[table] ll; call 1;"
		     "if r0 == 0 goto +4;"
		     "if w6 > 63 goto +3;"
		     "r6 <<= 3; r0 += r6;"
		     "r0 = *(u64 *)(r0 + 0);"
		     "r0 = 0;"
		     "exit;" :: [table] "i"(&table));
}

/* twin of loop_some_inputs / loop_budget: the trip count is bounded for every input */
SEC("tuner") int loop_bounded(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 n = ctx->n_ranks & 15, sum = 0;
	for (__u32 i = 0; i < n; i++)
		sum += i ^ ctx->coll_type;
	ctx->n_channels = (__s32)(sum & 31) + 1;
	return 0;
}

/* twin of div_zero_one_path: the divisor is checked on every path */
SEC("tuner") int div_checked(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 d = ctx->n_nodes;
	if (d == 0)
		return 0;
	return ctx->n_ranks / d;
}

/* twin of call_depth: bounded non-recursive calls to a subprogram */
static __attribute__((noinline)) __u64 slot_sum(struct table *t, __u32 from)
{
	__u64 s = 0;
	for (__u32 i = from; i < 64; i += 8)
		s += t->slots[i];
	return s;
}

SEC("tuner") int calls_bounded(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	struct table *t = bpf_map_lookup_elem(&table, &key);
	if (!t)
		return 0;
	return (int)(slot_sum(t, 0) + slot_sum(t, 3));
}

/* loops over 16 and 64 elements with data-dependent branches in the body */
SEC("tuner") int argmin_cost(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 best = 0xffffffff;
	int best_a = -1, best_p = -1;
	for (int a = 0; a < NCCLBPF_NUM_ALGOS; a++) {
		for (int p = 0; p < NCCLBPF_NUM_PROTOS; p++) {
			if (!NCCLBPF_AVAILABLE(ctx, a, p))
				continue;
			__u32 c = NCCLBPF_COST_BITS(ctx, a, p);
			if (c < best) {
				best = c;
				best_a = a;
				best_p = p;
			}
		}
	}
	ctx->algo = best_a;
	ctx->proto = best_p;
	return 0;
}

SEC("tuner") int table_scan(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 key = 0;
	struct table *t = bpf_map_lookup_elem(&table, &key);
	if (!t)
		return 0;
	__u64 max = 0;
	int at = 0;
#pragma clang loop unroll(disable)
	for (int i = 0; i < 64; i++) {
		if (t->slots[i] > max) {
			max = t->slots[i];
			at = i;
		}
	}
	t->slots[(ctx->coll_type + 1) & 63] += 1;
	ctx->n_channels = at + 1;
	return 0;
}

/* clang -O2 merges the proto and n_channels stores into one 8-byte store at offset 144:
 * a plain field-by-field policy must verify (regression). */
SEC("tuner") int merged_output_store(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	ctx->n_channels = 4;
	return 0;
}

/* twin of rank_local_branch: the branch is on rank-invariant data (the node count) */
SEC("tuner") int rank_invariant_branch(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_nodes > 1)
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	return 0;
}

/* twin of rank_local_latency: the decision comes from read-only configuration (.rodata,
 * the same object on every rank) and the collective's size */
const volatile __u32 large_channels = 16;
SEC("tuner") int rank_invariant_config(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes >= (1u << 20))
		ctx->n_channels = large_channels;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

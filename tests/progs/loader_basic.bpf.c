/* Loader test object: BTF maps of each kind, global data in .rodata/.data/.bss and
 * string literals, static and global subprogram calls (nested), two program sections.
 * tests/loader/test_loader_objects.c checks its structure; do not reorder lightly. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, __u64);
	__type(value, struct ncclbpf_latency_stats);
} lat_hash SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 16);
	__uint(key_size, 4);
	__uint(value_size, 12);
	__uint(map_flags, 0);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 64);
	__type(key, struct ncclbpf_latency_key);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} shared_lru SEC(".maps");

const volatile __u64 threshold = 65536;     /* .rodata */
const volatile __u32 limits[4] = {1, 2, 3, 4}; /* .rodata */
__u64 calls = 7;                              /* .data */
__u32 seen_bytes[8] = {0, 5};                 /* .data */
__u64 total_bytes;                            /* .bss */
__u32 last_coll;                              /* .bss */

static __attribute__((noinline)) __u64 clamp_u64(__u64 v, __u64 hi)
{
	return v > hi ? hi : v;
}

static __attribute__((noinline)) __u64 scaled(__u64 v)
{
	return clamp_u64(v * 3, 1000000) + 1;
}

__attribute__((noinline)) int global_pick(__u64 n)
{
	return n > threshold ? NCCLBPF_ALGO_RING : NCCLBPF_ALGO_TREE;
}

SEC("tuner")
int tuner_main(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	__u64 *s;

	calls++;
	total_bytes += ctx->n_bytes;
	last_coll = ctx->coll_type;
	s = bpf_map_lookup_elem(&scratch, &k);
	if (s)
		*s = scaled(ctx->n_bytes);
	ctx->algo = global_pick(ctx->n_bytes);
	ctx->n_channels = (int)limits[ctx->coll_type & 3];
	return 0;
}

SEC("profiler")
int profiler_main(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 key = ctx->comm_id;
	struct ncclbpf_latency_stats *st = bpf_map_lookup_elem(&lat_hash, &key);

	if (!st) {
		bpf_printk("new comm %llu", key);
		return 0;
	}
	st->count++;
	st->last_ns = clamp_u64(ctx->host_ns, 1000000000ull);
	seen_bytes[ctx->coll_type & 7] += 1;
	bpf_map_lookup_elem(&counters, &key);
	bpf_map_lookup_elem(&shared_lru, &key);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

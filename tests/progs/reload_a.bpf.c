/* Hot-reload stress test (tests/control): policy "a" is a chain of two programs. The first
 * sets the algorithm, the second the protocol and channels, and both count the call in the
 * shared `calls` map (slot 0 by the first program, slot 1 by the second). A decision that
 * mixes programs of reload_a and reload_b (a torn chain) is detectable; since both objects
 * declare the same maps, a reload keeps the counts, so the totals must equal the calls. */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} calls SEC(".maps");

static __always_inline void count(__u32 slot)
{
	__u64 *c = bpf_map_lookup_elem(&calls, &slot);
	if (c)
		__sync_fetch_and_add(c, 1);
}

SEC("tuner")
int first_a(struct ncclbpf_tuner_ctx *ctx)
{
	count(0);
	ctx->algo = NCCLBPF_ALGO_RING;
	ctx->n_channels = 11; /* overwritten by the second program of the same version */
	return 0;
}

SEC("tuner")
int second_a(struct ncclbpf_tuner_ctx *ctx)
{
	count(1);
	if (ctx->n_channels == 11) {
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		ctx->n_channels = 7;
	} else {
		ctx->n_channels = 1; /* preceded by another version's first program: torn */
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

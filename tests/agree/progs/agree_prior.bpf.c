/* Agreement test policy (tests/agree/run_agree.sh: members that cannot join, ranks
 * configured differently): a closed-loop policy with a prior. Until the ranks agreed on a
 * measurement it runs 2 channels (not NCCL's choice), then the widest channel count any
 * rank saw NCCL run divided by cfg_div. With version 0 (all zeros) it therefore decides
 * differently from NCCL's defaults, so a rank that reads zeros while the others fell back
 * diverges - what a rank without ncclbpf's profiler plugin did before it learned to fall
 * back with the others. `ncclbpf config agree_prior.bpf.o cfg_prior=3` makes the same
 * program with another configuration: the same agreed maps, other decisions (a rank
 * configured so was never noticed before the configuration became part of joining). */
#include <ncclbpf/policy.h>

const volatile __u32 cfg_div = 2;
const volatile __u32 cfg_prior = 2;

struct seen {
	__u64 ch; /* widest channel count NCCL ran (max over ranks) */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct seen);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 6)); /* K = 64 */
} prior_seen SEC(".maps");

SEC("profiler") int prior_record(struct ncclbpf_profiler_ctx *ctx)
{
	__u32 k = 0;
	struct seen *e = bpf_map_lookup_elem(&prior_seen, &k);
	if (e && ctx->n_channels > e->ch)
		e->ch = ctx->n_channels;
	return 0;
}

SEC("tuner") int prior_tuner(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 0;
	struct seen *e = bpf_map_lookup_elem(&prior_seen, &k);
	if (!e || e->ch == 0) {
		ctx->n_channels = (__s32)cfg_prior; /* the prior */
		return 0;
	}
	__u64 div = cfg_div;
	if (div < 1 || div > 64)
		div = 2;
	ctx->n_channels = e->ch >= div && e->ch <= 64 ? (__s32)(e->ch / div) : 1;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

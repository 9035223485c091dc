/* Declares rt_shared pinned like runtime_pin_writer.bpf.c but read-only to programs
 * (BPF_F_RDONLY_PROG): a tuner reading it would have its loads treated as rank-invariant
 * while the writer's profiler program changes them per rank. Binding must fail, naming both
 * declarations (tests/runtime, issue 14). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__uint(map_flags, BPF_F_RDONLY_PROG);
	__type(key, __u64);
	__type(value, __u64);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rt_shared SEC(".maps");

SEC("tuner")
int decide_readonly(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 key = ctx->comm_id;
	__u64 *v = bpf_map_lookup_elem(&rt_shared, &key);
	if (v && *v > 1000)
		ctx->n_channels = 4;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

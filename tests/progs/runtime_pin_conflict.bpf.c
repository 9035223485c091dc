/* Declares rt_shared pinned with a different value size than runtime_pin_writer.bpf.c:
 * opening it after the writer must fail with a precise error (tests/runtime). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, __u64);
	__type(value, __u32);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} rt_shared SEC(".maps");

SEC("profiler")
int conflict(struct ncclbpf_profiler_ctx *ctx)
{
	__u64 key = ctx->comm_id;
	__u32 val = 1;
	bpf_map_update_elem(&rt_shared, &key, &val, BPF_ANY);
	return 0;
}

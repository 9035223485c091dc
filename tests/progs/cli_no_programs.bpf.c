/* An object with a map and a license but no program (tests/tools: `ncclbpf verify` must
 * call that an error unless --allow-empty). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} unused_table SEC(".maps");

char LICENSE[] SEC("license") = "GPL";

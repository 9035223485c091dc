/* Shared maps of the loop corpus (tests/verifier/loops: loop shapes as clang emits them,
 * compiled per -mcpu and -O level; verdicts asserted by test_verifier_loops). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u64);
} counts SEC(".maps");

struct row {
	__u64 a[16];
	__u32 n;
	__u32 limit;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct row);
} rows SEC(".maps");

/* the everyday body: one map update per iteration */
#define BUMP(key)                                                                           \
	do {                                                                                \
		__u32 k_ = (key);                                                           \
		__u64 *v_ = bpf_map_lookup_elem(&counts, &k_);                              \
		if (v_)                                                                     \
			*v_ += 1;                                                           \
	} while (0)

/* libbpf's map-in-map and program-array declarations with initial `values` (tests/tools):
 * `ncclbpf info` / `disasm` inspect them; the runtime refuses them. */
#include <ncclbpf/policy.h>

#define __array(name, val) typeof(val) *name[]

struct inner {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} inner1 SEC(".maps");

struct {
	__uint(type, 12); /* BPF_MAP_TYPE_ARRAY_OF_MAPS */
	__uint(max_entries, 2);
	__type(key, __u32);
	__array(values, struct inner);
} outer SEC(".maps") = { .values = { &inner1 } };

int tail_target(void *ctx)
{
	return 0;
}

struct {
	__uint(type, 3); /* BPF_MAP_TYPE_PROG_ARRAY */
	__uint(max_entries, 2);
	__uint(key_size, 4);
	__array(values, int(void *));
} jump_table SEC(".maps") = { .values = { [0] = (void *)&tail_target } };

SEC("tracepoint/syscalls/sys_enter_openat")
int on_open(void *ctx)
{
	return 0;
}

char LICENSE[] SEC("license") = "GPL";

/* Loader test object with code only in .text (the shape bpf_conformance's ELF tests and
 * hand-written objects have): its global function is the program, the static one a
 * subprogram appended to it. */
#include <ncclbpf/policy.h>

static __attribute__((noinline)) __u64 twice(__u64 x)
{
	return 2 * x;
}

__u64 entry(__u64 *mem)
{
	return twice(mem[0]) + 1;
}

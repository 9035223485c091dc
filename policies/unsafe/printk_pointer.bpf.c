/* Rejected: a pointer passed to bpf_printk would write a host address to the log. */
#include <ncclbpf/policy.h>

SEC("profiler") int printk_pointer(struct ncclbpf_profiler_ctx *ctx)
{
	bpf_printk("ctx at %llx", (unsigned long)ctx); // EXPECT: E-HELPER-ARG
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

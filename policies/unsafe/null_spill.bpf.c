/* Rejected: the lookup result is spilled to the stack, reloaded and dereferenced
 * without a NULL check (the spill keeps the possibly-NULL state). */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") __attribute__((naked)) int null_spill(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call 1;" :: [stats] "i"(&stats));
	asm volatile("*(u64 *)(r10 - 16) = r0;");
	asm volatile("r1 = *(u64 *)(r10 - 16);");
	asm volatile("r0 = *(u64 *)(r1 + 0);"); // EXPECT: E-NULL-DEREF
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Rejected: a copy is dereferenced while only... nothing was checked; the copy carries
 * the possibly-NULL state of the original. */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") __attribute__((naked)) int null_copy(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call 1;" :: [stats] "i"(&stats));
	asm volatile("r6 = r0;");
	asm volatile("r0 = *(u64 *)(r6 + 8);"); // EXPECT: E-NULL-DEREF
	asm volatile("exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

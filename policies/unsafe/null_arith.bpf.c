/* Rejected: arithmetic on the lookup result before the NULL check (NULL + 8 would
 * pass a later "!= 0" test). */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") __attribute__((naked)) int null_arith(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r1 = 0; *(u64 *)(r10 - 8) = r1; r2 = r10; r2 += -8;"
		     "r1 = %[stats] ll; call 1;" :: [stats] "i"(&stats));
	asm volatile("r0 += 8;"); // EXPECT: E-NULL-ARITH
	asm volatile("if r0 == 0 goto +1; r0 = *(u64 *)(r0 + 0); r0 = 0; exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

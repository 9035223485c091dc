/* Rejected: the key is never written before the lookup reads it. */
#include <ncclbpf/policy.h>

struct val { __u64 count; __u64 sum; };
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u64);
	__type(value, struct val);
} stats SEC(".maps");

SEC("tuner") __attribute__((naked)) int helper_key_uninit(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r2 = r10; r2 += -8; r1 = %[stats] ll;" :: [stats] "i"(&stats));
	asm volatile("call 1;"); // EXPECT: E-HELPER-ARG
	asm volatile("r0 = 0; exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

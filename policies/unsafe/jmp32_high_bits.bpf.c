/* Rejected: a 32-bit comparison only bounds the low half of a 64-bit index. */
#include <ncclbpf/policy.h>

struct table { __u64 slots[64]; };
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct table);
} table SEC(".maps");

SEC("tuner") __attribute__((naked)) int jmp32_high_bits(struct ncclbpf_tuner_ctx *ctx)
{
	asm volatile("r6 = *(u64 *)(r1 + 8);"
		     "r1 = 0; *(u32 *)(r10 - 4) = r1; r2 = r10; r2 += -4;"
		     "r1 = %[table] ll; call 1;"
		     "if r0 == 0 goto +4;"
		     "if w6 > 63 goto +3;"
		     "r6 <<= 3; r0 += r6;" :: [table] "i"(&table));
	asm volatile("r0 = *(u64 *)(r0 + 0);"); // EXPECT: E-MAP-VALUE-OOB
	asm volatile("r0 = 0; exit;");
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

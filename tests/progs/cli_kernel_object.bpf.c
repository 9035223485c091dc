/* An object written for the kernel, not for ncclbpf (tests/tools: `ncclbpf info` and
 * `disasm` must inspect it all the same): kernel-only map types (perf event array, ring
 * buffer, bloom filter), libbpf's numa_node and map_extra fields, names far longer than
 * 64 characters, legacy packet loads (LD_ABS / LD_IND) in a socket filter, and extern
 * symbols the kernel's loader resolves (a .kconfig variable, a kfunc). */
#include <ncclbpf/policy.h>

struct {
	__uint(type, 4); /* BPF_MAP_TYPE_PERF_EVENT_ARRAY */
	__uint(key_size, 4);
	__uint(value_size, 4);
	__uint(max_entries, 16);
} events SEC(".maps");

struct {
	__uint(type, 27); /* BPF_MAP_TYPE_RINGBUF */
	__uint(max_entries, 4096);
} ring SEC(".maps");

struct {
	__uint(type, 30); /* BPF_MAP_TYPE_BLOOM_FILTER */
	__uint(max_entries, 100);
	__uint(map_extra, 3); /* number of hash functions */
	__type(value, __u32);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8);
	__uint(map_flags, 4); /* BPF_F_NUMA_NODE */
	__uint(numa_node, 1);
	__type(key, __u32);
	__type(value, __u64);
} counters_placed_on_the_second_numa_node_of_a_large_machine_for_locality_reasons SEC(".maps");

extern unsigned int LINUX_KERNEL_VERSION __attribute__((section(".kconfig"), weak));
extern void bpf_rcu_read_lock(void) __attribute__((section(".ksyms")));

/* 300 characters: longer than the 64 the loader once allowed, well within KSYM_NAME_LEN */
#define LONG_NAME                                                                              \
	a_function_name_of_three_hundred_characters_0123456789_0123456789_0123456789_0123456789_\
0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_\
0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_0123456789_\
0123456789_0123456789_01234567

SEC("socket")
int LONG_NAME(void *skb)
{
	void *p = &events, *q = &ring, *s = &seen;
	__u32 k = 0;
	__u64 *v = bpf_map_lookup_elem(
		&counters_placed_on_the_second_numa_node_of_a_large_machine_for_locality_reasons, &k);
	asm volatile("" ::"r"(p), "r"(q), "r"(s));
	/* legacy packet loads: r6 holds the skb */
	asm volatile("r6 = %[skb]\n\t"
		     "r0 = *(u16 *)skb[12]\n\t"
		     "r3 = 2\n\t"
		     "r0 = *(u8 *)skb[r3]\n\t"
		     "r0 = *(u32 *)skb[-4]\n\t" ::[skb] "r"(skb)
		     : "r0", "r1", "r2", "r3", "r4", "r5", "r6");
	bpf_rcu_read_lock();
	return v ? (int)LINUX_KERNEL_VERSION : 0;
}

char LICENSE[] SEC("license") = "GPL";

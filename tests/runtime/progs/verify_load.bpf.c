/* One valid tuner program and, per variant (-DVL_<CASE>, tests/runtime/CMakeLists.txt), map
 * declarations the runtime refuses at load although every program verifies: `ncclbpf
 * verify` must refuse exactly these (tests/runtime/test_verify_load.c, issue 24 item 3). */
#include <ncclbpf/policy.h>

struct vl_value12 {
	__u32 a, b, c; /* 12 bytes: agreed maps reduce __u64 words */
};

#define AGREED_MAP(name)                                                       \
	struct {                                                               \
		__uint(type, BPF_MAP_TYPE_ARRAY);                              \
		__uint(max_entries, 4);                                        \
		__type(key, __u32);                                            \
		__type(value, __u64);                                          \
		__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 4));       \
	} name SEC(".maps")
#define AGREED_MAPS_4(p) AGREED_MAP(p##0); AGREED_MAP(p##1); AGREED_MAP(p##2); AGREED_MAP(p##3)
#define AGREED_MAPS_20(p)                                                      \
	AGREED_MAPS_4(p##a); AGREED_MAPS_4(p##b); AGREED_MAPS_4(p##c);         \
	AGREED_MAPS_4(p##d); AGREED_MAPS_4(p##e)

#if defined(VL_PERF_EVENT_ARRAY)
struct {
	__uint(type, 4); /* BPF_MAP_TYPE_PERF_EVENT_ARRAY */
	__uint(key_size, 4);
	__uint(value_size, 4);
	__uint(max_entries, 16);
} events SEC(".maps");
#elif defined(VL_RINGBUF)
struct {
	__uint(type, 27); /* BPF_MAP_TYPE_RINGBUF */
	__uint(max_entries, 4096);
} ring SEC(".maps");
#elif defined(VL_BLOOM_FILTER)
struct {
	__uint(type, 30); /* BPF_MAP_TYPE_BLOOM_FILTER */
	__uint(max_entries, 100);
	__uint(map_extra, 3);
	__type(value, __u32);
} seen SEC(".maps");
#elif defined(VL_AGREED_RDONLY)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 4) | BPF_F_RDONLY_PROG);
} agreed_ro SEC(".maps");
#elif defined(VL_AGREED_VALUE12)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, struct vl_value12);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_SUM, 4));
} agreed_12 SEC(".maps");
#elif defined(VL_AGREED_OP7)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, NCCLBPF_AGREED(7, 4));
} agreed_op7 SEC(".maps");
#elif defined(VL_AGREED_PERCPU)
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, NCCLBPF_AGREED(NCCLBPF_AGREE_MAX, 4));
} agreed_pcpu SEC(".maps");
#elif defined(VL_PIN_UNKNOWN)
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, __u64);
	__uint(pinning, 2); /* libbpf knows 0 and 1 only */
} pin2 SEC(".maps");
#elif defined(VL_TOO_BIG)
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1u << 30); /* 8 GiB of values */
	__type(key, __u32);
	__type(value, __u64);
} huge SEC(".maps");
#elif defined(VL_LATENCY_WRONG)
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct ncclbpf_latency_key);
	__type(value, __u64); /* the plugin's map holds struct ncclbpf_latency_stats */
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} ncclbpf_latency SEC(".maps");
#elif defined(VL_AGREED_20) /* with VL_BAD_PROGRAM too */
AGREED_MAPS_20(ag);
#elif defined(VL_AGREED_33)
AGREED_MAPS_20(ag);
AGREED_MAPS_4(x);
AGREED_MAPS_4(y);
AGREED_MAPS_4(z);
AGREED_MAP(last);
#else /* VL_OK: what the runtime loads */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u64);
} plain SEC(".maps");
#endif

SEC("tuner")
int vl_decide(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->n_bytes > 65536)
		ctx->algo = NCCLBPF_ALGO_RING;
#ifdef VL_BAD_PROGRAM
	ctx->n_bytes = 0; /* an input: rejected (E-CTX-WRITE) */
#endif
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

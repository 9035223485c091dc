/* Loader test object: legacy `maps` section (struct bpf_map_def, one entry larger than
 * 20 bytes), several programs in one section and in several sections, a program with
 * no subprograms, and a string literal. */
#include <ncclbpf/policy.h>

struct bpf_map_def {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
};

struct bpf_map_def_ext {
	unsigned int type;
	unsigned int key_size;
	unsigned int value_size;
	unsigned int max_entries;
	unsigned int map_flags;
	unsigned int extra_id;
	unsigned int extra_pin;
};

struct bpf_map_def SEC("maps") legacy_arr = {
	.type = BPF_MAP_TYPE_ARRAY,
	.key_size = 4,
	.value_size = 8,
	.max_entries = 32,
};

struct bpf_map_def_ext SEC("maps") legacy_hash = {
	.type = BPF_MAP_TYPE_HASH,
	.key_size = 8,
	.value_size = 16,
	.max_entries = 1024,
	.map_flags = 1,
	.extra_id = 9,
};

SEC("tuner")
int first(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 k = 1;
	__u64 *v = bpf_map_lookup_elem(&legacy_arr, &k);

	if (v)
		*v += ctx->n_bytes;
	return 0;
}

SEC("tuner")
int second(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 k = ctx->comm_id;

	bpf_map_lookup_elem(&legacy_hash, &k);
	ctx->proto = NCCLBPF_PROTO_SIMPLE;
	return 1;
}

SEC("tuner/chunk")
int chunk(struct ncclbpf_chunk_ctx *ctx)
{
	if (ctx->chunk_size < 4096)
		ctx->chunk_size = 4096;
	return 0;
}

SEC("net")
int net_obs(struct ncclbpf_net_ctx *ctx)
{
	bpf_printk("net op %u", ctx->op);
	return 2;
}

char LICENSE[] SEC("license") = "GPL";

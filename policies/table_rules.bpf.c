/* table_rules: a table-driven tuner. The rules are plain data in a .rodata table
 * (`const volatile`, libbpf's convention for read-only configuration): changing the
 * policy means editing rows, never logic. The loader exposes the table as a one-entry
 * array map named ".rodata" (read-only to the program), so tooling can also rewrite the
 * rows of a built object before it is loaded. The first rule whose collective and
 * [min_bytes, max_bytes] match wins; no
 * match leaves NCCL's choice. Fields set to -1 (algo, proto) or 0 (channels) keep NCCL's.
 *
 * Default rules (an 8-GPU NVLink node):
 *   AllReduce    0 .. 32 KiB    Tree / LL      NCCL's channels
 *   any          4 .. 32 MiB    Ring / LL128   NCCL's channels
 *   any         64 .. 192 MiB   Ring / Simple  NCCL's channels
 */
#include <ncclbpf/policy.h>

#define MAX_RULES 16
#define ANY_COLL (-1)
#define KiB (1024ull)
#define MiB (1024ull * 1024ull)

struct rule {
	__u64 min_bytes;
	__u64 max_bytes;  /* inclusive */
	__s32 coll_type;  /* NCCLBPF_COLL_* or ANY_COLL */
	__s32 algo;       /* NCCLBPF_ALGO_* or NCCLBPF_ALGO_KEEP */
	__s32 proto;      /* NCCLBPF_PROTO_* or NCCLBPF_PROTO_KEEP */
	__s32 n_channels; /* 1..64 or NCCLBPF_CHANNELS_KEEP */
};

const volatile __u32 n_rules = 3;
const volatile struct rule rules[MAX_RULES] = {
	{ 0, 32 * KiB, NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL, 0 },
	{ 4 * MiB, 32 * MiB, ANY_COLL, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128, 0 },
	{ 64 * MiB, 192 * MiB, ANY_COLL, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, 0 },
};

SEC("tuner")
int table_rules(struct ncclbpf_tuner_ctx *ctx)
{
	__u64 n = ctx->n_bytes;
	__s32 coll = (__s32)ctx->coll_type;
	__u32 count = n_rules;
	int matched = 0;

	/* Fully unrolled: no loop for the verifier, constant offsets into the table. */
#pragma clang loop unroll(full)
	for (int i = 0; i < MAX_RULES; i++) {
		if (matched || (__u32)i >= count)
			continue;
		if (rules[i].coll_type != ANY_COLL && rules[i].coll_type != coll)
			continue;
		if (n < rules[i].min_bytes || n > rules[i].max_bytes)
			continue;
		ctx->algo = rules[i].algo;
		ctx->proto = rules[i].proto;
		ctx->n_channels = rules[i].n_channels;
		matched = 1;
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

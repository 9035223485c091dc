// SPDX-License-Identifier: BSD-3-Clause
/* tuned_rules: the table policy that `ncclbpf tune -o` and `ncclbpf rules compile` fill.
 *
 * The rules are data in .rodata (`const volatile`): the tools copy this object, write the
 * rows and the count into the copy's .rodata section, load and verify the result with the
 * library, and only then write it out. No compiler is needed at that point, and the logic
 * stays the reviewed, verified code below.
 *
 * Semantics are those of NCCL's example tuner (nccl_tuner.conf): the first rule whose
 * collective, [min_bytes, max_bytes], nNodes, nRanks and numPipeOps match decides; -1 is a
 * wildcard; algo/proto -1 and channels 0 keep NCCL's choice. Every input used is
 * rank-invariant (regBuff, which is rank-local, is deliberately not a rule field), so all
 * ranks decide the same. A requested pair NCCL marked unavailable is left to the plugin,
 * which keeps NCCL's choice.
 *
 * As shipped (no rows) the policy is a pass-through.
 */
#include <ncclbpf/policy.h>

#define TUNED_MAX_RULES 32

struct tuned_rule {
	__u64 min_bytes;
	__u64 max_bytes;    /* inclusive */
	__s32 coll_type;    /* NCCLBPF_COLL_* or -1 */
	__s32 n_nodes;      /* -1 = any */
	__s32 n_ranks;      /* -1 = any */
	__s32 num_pipe_ops; /* -1 = any */
	__s32 algo;         /* NCCLBPF_ALGO_* or NCCLBPF_ALGO_KEEP */
	__s32 proto;        /* NCCLBPF_PROTO_* or NCCLBPF_PROTO_KEEP */
	__s32 n_channels;   /* 1..64 or NCCLBPF_CHANNELS_KEEP */
	__s32 _pad;
};                          /* 48 bytes: the tools write this layout (src/tools/tune_object.c) */

/* The magic marks the table so the tools can check they patch the layout they know. */
const volatile __u32 tuned_magic = 0x4e425254; /* "TRBN" */
const volatile __u32 tuned_n_rules = 0;
const volatile struct tuned_rule tuned_rules[TUNED_MAX_RULES] = {
	{ 0, 0, -1, -1, -1, -1, NCCLBPF_ALGO_KEEP, NCCLBPF_PROTO_KEEP, 0, 0 },
};

static __always_inline int match(const volatile struct tuned_rule *r, struct ncclbpf_tuner_ctx *ctx)
{
	if (r->coll_type != -1 && r->coll_type != (__s32)ctx->coll_type)
		return 0;
	if (ctx->n_bytes < r->min_bytes || ctx->n_bytes > r->max_bytes)
		return 0;
	if (r->n_nodes != -1 && r->n_nodes != (__s32)ctx->n_nodes)
		return 0;
	if (r->n_ranks != -1 && r->n_ranks != (__s32)ctx->n_ranks)
		return 0;
	if (r->num_pipe_ops != -1 && r->num_pipe_ops != (__s32)ctx->num_pipe_ops)
		return 0;
	return 1;
}

SEC("tuner")
int tuned_rules_pick(struct ncclbpf_tuner_ctx *ctx)
{
	__u32 count = tuned_n_rules;

	/* A counted loop (the verifier bounds it): the index is checked against the table size
	 * before every access, and a match returns at once. */
#pragma clang loop unroll(disable)
	for (__u32 i = 0; i < TUNED_MAX_RULES; i++) {
		if (i >= count)
			return 0;
		if (match(&tuned_rules[i], ctx)) {
			ctx->algo = tuned_rules[i].algo;
			ctx->proto = tuned_rules[i].proto;
			ctx->n_channels = tuned_rules[i].n_channels;
			return 0;
		}
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";

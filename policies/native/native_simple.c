/* Native baselines of the map-less policies (noop, size_aware, nvlink_ring_mid,
 * bad_channels, table_rules). Same logic as the .bpf.c files, line for line. */
#include <string.h>

#include "native_policies.h"

#define KiB (1024ull)
#define MiB (1024ull * 1024ull)

int native_noop(struct ncclbpf_tuner_ctx *ctx)
{
	(void)ctx;
	return 0;
}

int native_size_aware(struct ncclbpf_tuner_ctx *ctx)
{
	uint64_t n = ctx->n_bytes;
	if (ctx->coll_type == NCCLBPF_COLL_ALLREDUCE && n <= 32 * KiB)
		ctx->algo = NCCLBPF_ALGO_TREE;
	else
		ctx->algo = NCCLBPF_ALGO_RING;
	if (n < 4 * KiB) {
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		ctx->n_channels = 2;
	} else if (n < MiB) {
		ctx->proto = NCCLBPF_PROTO_LL;
		ctx->n_channels = 4;
	} else {
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
		ctx->n_channels = 8;
	}
	return 0;
}

int native_nvlink_ring_mid(struct ncclbpf_tuner_ctx *ctx)
{
	uint64_t n = ctx->n_bytes;
	if (n >= 4 * MiB && n <= 32 * MiB) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_LL128;
	} else if (n >= 64 * MiB && n <= 192 * MiB) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

int native_bad_channels(struct ncclbpf_tuner_ctx *ctx)
{
	ctx->n_channels = 1;
	return 0;
}

struct native_rule {
	uint64_t min_bytes, max_bytes;
	int32_t coll_type, algo, proto, n_channels;
};

/* The default table of policies/table_rules.bpf.c. */
static const struct native_rule rules[] = {
	{ 0, 32 * KiB, NCCLBPF_COLL_ALLREDUCE, NCCLBPF_ALGO_TREE, NCCLBPF_PROTO_LL, 0 },
	{ 4 * MiB, 32 * MiB, -1, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128, 0 },
	{ 64 * MiB, 192 * MiB, -1, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE, 0 },
};

int native_table_rules(struct ncclbpf_tuner_ctx *ctx)
{
	for (size_t i = 0; i < sizeof(rules) / sizeof(rules[0]); i++) {
		const struct native_rule *r = &rules[i];
		if (r->coll_type != -1 && r->coll_type != (int32_t)ctx->coll_type)
			continue;
		if (ctx->n_bytes < r->min_bytes || ctx->n_bytes > r->max_bytes)
			continue;
		ctx->algo = r->algo;
		ctx->proto = r->proto;
		ctx->n_channels = r->n_channels;
		break;
	}
	return 0;
}

const struct native_policy native_policies[] = {
	{ "noop", native_noop },
	{ "size_aware", native_size_aware },
	{ "nvlink_ring_mid", native_nvlink_ring_mid },
	{ "bad_channels", native_bad_channels },
	{ "lookup_only", native_lookup_only },
	{ "lookup_update", native_lookup_update },
	{ "table_rules", native_table_rules },
	{ NULL, NULL },
};

const struct native_policy *native_policy_find(const char *name)
{
	for (const struct native_policy *p = native_policies; p->name; p++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

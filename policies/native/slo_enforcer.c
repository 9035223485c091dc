/* Native C baseline of tests/profiler/progs/slo_enforcer_local.bpf.c (the rank-local
 * predecessor of policies/slo_enforcer.bpf.c): same levels and windows; targets per
 * collective type set with native_slo_enforcer_set_target, statistics through a lookup
 * function the caller installs. Single-threaded use only. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "ncclbpf/policy.h"

typedef int (*native_latency_lookup_fn)(const struct ncclbpf_latency_key *key,
					struct ncclbpf_latency_stats *out);

struct slo_slot {
	bool used;
	struct ncclbpf_latency_key key;
	uint64_t seen, sum_ns;
	uint32_t n, level;
};

static struct slo_slot slo_table[1024];
static uint64_t slo_targets[NCCLBPF_NUM_COLLS];
static native_latency_lookup_fn slo_lookup;

void native_slo_enforcer_set_lookup(native_latency_lookup_fn fn)
{
	slo_lookup = fn;
}

void native_slo_enforcer_set_target(uint32_t coll_type, uint64_t target_ns)
{
	if (coll_type < NCCLBPF_NUM_COLLS)
		slo_targets[coll_type] = target_ns;
}

void native_slo_enforcer_reset(void)
{
	memset(slo_table, 0, sizeof(slo_table));
	memset(slo_targets, 0, sizeof(slo_targets));
}

int native_slo_enforcer(struct ncclbpf_tuner_ctx *ctx)
{
	if (ctx->coll_type >= NCCLBPF_NUM_COLLS || !slo_targets[ctx->coll_type])
		return 0;
	uint64_t target = slo_targets[ctx->coll_type];
	struct ncclbpf_latency_key key;
	memset(&key, 0, sizeof(key));
	key.comm_id = ctx->comm_id;
	key.coll_type = ctx->coll_type;
	key.size_bucket = ncclbpf_size_bucket(ctx->n_bytes);
	uint64_t h = (key.comm_id ^ ((uint64_t)key.coll_type << 40) ^ key.size_bucket) *
		     0x9e3779b97f4a7c15ull;
	struct slo_slot *st = NULL;
	for (uint32_t i = 0; i < 1024 && !st; i++) {
		struct slo_slot *s = &slo_table[((h >> 54) + i) & 1023];
		if (s->used && !memcmp(&s->key, &key, sizeof(key))) {
			st = s;
		} else if (!s->used) {
			s->used = true;
			s->key = key;
			return 0; /* first call: NCCL's choice */
		}
	}
	if (!st)
		return 0;
	struct ncclbpf_latency_stats lat;
	if (slo_lookup && slo_lookup(&key, &lat) == 0 && lat.count > st->seen) {
		st->seen = lat.count;
		st->sum_ns += lat.last_ns;
		st->n++;
	}
	if (st->n >= 4) {
		uint64_t avg = st->sum_ns / st->n;
		if (avg > target && st->level < 3)
			st->level++;
		else if (avg * 100 < target * 70 && st->level > 0)
			st->level--;
		st->sum_ns = 0;
		st->n = 0;
	}
	int32_t max = ctx->max_channels ? (int32_t)ctx->max_channels : 32;
	if (max > NCCLBPF_MAX_CHANNELS)
		max = NCCLBPF_MAX_CHANNELS;
	if (st->level == 0)
		return 0;
	ctx->n_channels = max;
	if (st->level == 2 && NCCLBPF_AVAILABLE(ctx, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_LL128)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_LL128;
	} else if (st->level >= 2 &&
		   NCCLBPF_AVAILABLE(ctx, NCCLBPF_ALGO_RING, NCCLBPF_PROTO_SIMPLE)) {
		ctx->algo = NCCLBPF_ALGO_RING;
		ctx->proto = NCCLBPF_PROTO_SIMPLE;
	}
	return 0;
}

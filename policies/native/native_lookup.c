/* Native baselines of lookup_only / lookup_update: the same (collective, size bucket) ->
 * {calls, bytes} table as a small open-addressing hash map (256 slots, like the policy's
 * BPF_MAP_TYPE_HASH with max_entries 256). Single-threaded use only (benchmark baseline). */
#include <stdbool.h>
#include <string.h>

#include "native_policies.h"

struct slot {
	bool used;
	uint32_t coll_type, size_bucket;
	uint64_t calls, bytes;
};

static struct slot table[256];

static uint32_t slot_hash(uint32_t coll, uint32_t bucket)
{
	uint64_t h = ((uint64_t)coll << 32 | bucket) * 0x9e3779b97f4a7c15ull;
	return (uint32_t)(h >> 56);
}

static struct slot *find(uint32_t coll, uint32_t bucket, bool create)
{
	uint32_t h = slot_hash(coll, bucket);
	for (uint32_t i = 0; i < 256; i++) {
		struct slot *s = &table[(h + i) & 255];
		if (s->used && s->coll_type == coll && s->size_bucket == bucket)
			return s;
		if (!s->used) {
			if (!create)
				return NULL;
			s->used = true;
			s->coll_type = coll;
			s->size_bucket = bucket;
			return s;
		}
	}
	return NULL;
}

int native_lookup_only(struct ncclbpf_tuner_ctx *ctx)
{
	struct slot *s = find(ctx->coll_type, ncclbpf_size_bucket(ctx->n_bytes), false);
	return s ? 1 : 0;
}

int native_lookup_update(struct ncclbpf_tuner_ctx *ctx)
{
	struct slot *s = find(ctx->coll_type, ncclbpf_size_bucket(ctx->n_bytes), true);
	if (s) {
		s->calls++;
		s->bytes += ctx->n_bytes;
	}
	return 0;
}

/* Native C baseline of tests/profiler/progs/adaptive_channels_local.bpf.c (the rank-local
 * predecessor of policies/adaptive_channels.bpf.c): the same hill climb, the state in
 * a small open-addressing table (1024 slots, like the policy's hash map), the latency
 * statistics through a lookup function the caller installs (the benchmark and the tests
 * point it at the profiler's ncclbpf_latency data). Single-threaded use only. */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "ncclbpf/policy.h"

typedef int (*native_latency_lookup_fn)(const struct ncclbpf_latency_key *key,
					struct ncclbpf_latency_stats *out);

struct ac_state {
	uint64_t seen, sum_ns, prev_avg;
	uint32_t n;
	int32_t ch, dir;
	uint32_t mismatch;
};

struct ac_slot {
	bool used;
	struct ncclbpf_latency_key key;
	struct ac_state st;
};

static struct ac_slot ac_table[1024];
static native_latency_lookup_fn ac_lookup;

void native_adaptive_channels_set_lookup(native_latency_lookup_fn fn)
{
	ac_lookup = fn;
}

void native_adaptive_channels_reset(void)
{
	memset(ac_table, 0, sizeof(ac_table));
}

static struct ac_slot *ac_find(const struct ncclbpf_latency_key *k, bool *created)
{
	uint64_t h = (k->comm_id ^ ((uint64_t)k->coll_type << 40) ^ k->size_bucket) *
		     0x9e3779b97f4a7c15ull;
	for (uint32_t i = 0; i < 1024; i++) {
		struct ac_slot *s = &ac_table[((h >> 54) + i) & 1023];
		if (s->used && !memcmp(&s->key, k, sizeof(*k)))
			return s;
		if (!s->used) {
			s->used = true;
			s->key = *k;
			*created = true;
			return s;
		}
	}
	return NULL;
}

int native_adaptive_channels(struct ncclbpf_tuner_ctx *ctx)
{
	struct ncclbpf_latency_key key;
	memset(&key, 0, sizeof(key));
	key.comm_id = ctx->comm_id;
	key.coll_type = ctx->coll_type;
	key.size_bucket = ncclbpf_size_bucket(ctx->n_bytes);
	bool created = false;
	struct ac_slot *slot = ac_find(&key, &created);
	if (!slot)
		return 0;
	struct ac_state *st = &slot->st;
	if (created) {
		st->ch = 2;
		st->dir = 1;
		return 0;
	}
	int32_t max = ctx->max_channels ? (int32_t)ctx->max_channels : 64;
	if (max > NCCLBPF_MAX_CHANNELS)
		max = NCCLBPF_MAX_CHANNELS;
	struct ncclbpf_latency_stats lat;
	if (ac_lookup && ac_lookup(&key, &lat) == 0 && lat.count > st->seen) {
		st->seen = lat.count;
		if (lat.n_channels_last == (uint64_t)st->ch) {
			st->sum_ns += lat.last_ns;
			st->n++;
			st->mismatch = 0;
		} else if (++st->mismatch >= 8 && lat.n_channels_last > 0 &&
			   lat.n_channels_last <= NCCLBPF_MAX_CHANNELS) {
			st->ch = (int32_t)lat.n_channels_last;
			st->sum_ns = 0;
			st->n = 0;
			st->mismatch = 0;
		}
	}
	if (st->n >= 3) {
		uint64_t avg = st->sum_ns / st->n, prev = st->prev_avg;
		int32_t ch = st->ch;
		if (prev && avg > prev * 2) {
			ch /= 2;
			st->dir = -1;
		} else if (!prev || avg * 100 < prev * 97) {
			ch += st->dir * 2;
		} else {
			st->dir = -st->dir;
			ch += st->dir * 2;
		}
		if (ch <= 2) {
			ch = 2;
			st->dir = 1;
		}
		if (ch >= max) {
			ch = max;
			st->dir = -1;
		}
		st->ch = ch;
		st->prev_avg = avg;
		st->sum_ns = 0;
		st->n = 0;
	}
	ctx->n_channels = st->ch;
	return 0;
}

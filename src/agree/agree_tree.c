/* agree: the fan-in tree (docs/agreement.md "Scale") and the combinable partial reduction
 * its relays ship.
 *
 * Shape: a two-level tree with fan-out F, computed from (rank, F) alone so every rank
 * derives the same one. Rank r with r % F != 0 has parent r - r % F (its relay); relays
 * (r % F == 0, r > 0) and ranks 1 .. F-1 have parent 0 (the leader). The leader talks to
 * F - 1 + ceil(n / F) - 1 peers, a relay to at most F - 1: with F = ceil(sqrt(n)) both are
 * ~sqrt(n) - 200 sockets at 10,000 ranks instead of 10,000. F = 0 is the flat group.
 *
 * Partial reduction: a relay combines its own contribution and its children's into one
 * entry per index of value_size + 8 bytes: the op applied word by word over the
 * contributors, then a u64 count of contributing ranks. SUM/MIN/MAX combine directly,
 * MEAN carries sum + count and divides only at the leader, LEADER needs no partial at
 * all. An entry with count 0 is all zero (not contributed), as in a rank's own view. */
#include <stdlib.h>
#include <string.h>

#include "agree/agree_internal.h"
#include "ncclbpf/policy.h"

uint32_t agree_tree_fanout_for(uint32_t n_ranks, const char *env)
{
	if (env && *env) {
		if (strcmp(env, "flat") == 0 || strcmp(env, "0") == 0)
			return 0;
		char *end;
		unsigned long f = strtoul(env, &end, 10);
		if (*end == '\0' && f >= 2 && f <= 65536)
			return f >= n_ranks ? 0 : (uint32_t)f;
		/* malformed: the default (documented; every rank parses the same string) */
	}
	if (n_ranks <= AGREE_TREE_MIN_RANKS)
		return 0;
	uint32_t f = 1;
	while (f * f < n_ranks)
		f++;
	return f;
}

uint32_t agree_tree_parent(uint32_t rank, uint32_t fanout)
{
	if (rank == 0)
		return UINT32_MAX;
	if (fanout == 0)
		return 0;
	return rank % fanout ? rank - rank % fanout : 0;
}

uint32_t agree_tree_subtree(uint32_t rank, uint32_t fanout, uint32_t n_ranks)
{
	if (fanout == 0 || rank == 0 || rank % fanout || rank >= n_ranks)
		return rank == 0 ? 0 : 1; /* the leader's "subtree" is the group: unused */
	uint32_t end = rank + fanout < n_ranks ? rank + fanout : n_ranks;
	return end - rank;
}

bool agree_tree_is_relay(uint32_t rank, uint32_t fanout, uint32_t n_ranks)
{
	return agree_tree_subtree(rank, fanout, n_ranks) > 1;
}

static bool all_zero(const uint8_t *p, uint32_t n)
{
	for (uint32_t i = 0; i < n; i += 8) {
		uint64_t w;
		memcpy(&w, p + i, 8);
		if (w)
			return false;
	}
	return true;
}

/* Folds one contribution (count c >= 1 ranks) into partial entry `o`. */
static void fold(uint32_t op, uint8_t *o, const uint8_t *val, uint32_t words, uint64_t c)
{
	uint64_t have;
	memcpy(&have, o + (size_t)words * 8, 8);
	for (uint32_t w = 0; w < words; w++) {
		uint64_t x, y;
		memcpy(&x, val + (size_t)w * 8, 8);
		memcpy(&y, o + (size_t)w * 8, 8);
		switch (op) {
		case NCCLBPF_AGREE_MIN: y = have == 0 || x < y ? x : y; break;
		case NCCLBPF_AGREE_MAX: y = x > y ? x : y; break;
		default: y += x; break; /* SUM, MEAN */
		}
		memcpy(o + (size_t)w * 8, &y, 8);
	}
	have += c;
	memcpy(o + (size_t)words * 8, &have, 8);
}

void agree_partial_reset(const struct nb_map_agreed_desc *d, uint8_t *part)
{
	memset(part, 0, (size_t)(d->value_size + 8) * d->max_entries);
}

void agree_partial_add_dense(const struct nb_map_agreed_desc *d, uint8_t *part,
			     const uint8_t *view)
{
	if (d->op == NCCLBPF_AGREE_LEADER)
		return;
	uint32_t es = d->value_size + 8;
	for (uint32_t i = 0; i < d->max_entries; i++) {
		const uint8_t *e = view + (size_t)i * d->stride;
		if (!all_zero(e, d->value_size))
			fold(d->op, part + (size_t)i * es, e, d->value_size / 8, 1);
	}
}

void agree_partial_add_sparse(const struct nb_map_agreed_desc *d, uint8_t *part,
			      const struct agree_sparse *v, bool counted)
{
	if (d->op == NCCLBPF_AGREE_LEADER)
		return;
	uint32_t es = d->value_size + 8;
	uint32_t vs = counted ? es : d->value_size;
	for (uint32_t k = 0; k < v->n; k++) {
		uint32_t i = v->idx[k];
		if (i >= d->max_entries)
			continue;
		const uint8_t *e = v->vals + (size_t)k * vs;
		uint64_t c = 1;
		if (counted) {
			memcpy(&c, e + d->value_size, 8);
			if (c == 0)
				continue;
		}
		fold(d->op, part + (size_t)i * es, e, d->value_size / 8, c);
	}
}

void agree_partial_finish(const struct nb_map_agreed_desc *d, uint8_t *out,
			  const uint8_t *part, const uint8_t *self)
{
	memset(out, 0, (size_t)d->stride * d->max_entries);
	if (d->op == NCCLBPF_AGREE_LEADER) {
		if (self)
			memcpy(out, self, (size_t)d->stride * d->max_entries);
		return;
	}
	uint32_t es = d->value_size + 8, words = d->value_size / 8;
	for (uint32_t i = 0; i < d->max_entries; i++) {
		const uint8_t *e = part + (size_t)i * es;
		uint64_t c;
		memcpy(&c, e + d->value_size, 8);
		if (c == 0)
			continue;
		uint8_t *o = out + (size_t)i * d->stride;
		memcpy(o, e, d->value_size);
		if (d->op == NCCLBPF_AGREE_MEAN && c > 1)
			for (uint32_t w = 0; w < words; w++) {
				uint64_t x;
				memcpy(&x, o + (size_t)w * 8, 8);
				x /= c;
				memcpy(o + (size_t)w * 8, &x, 8);
			}
	}
}

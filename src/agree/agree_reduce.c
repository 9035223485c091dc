/* agree: the leader's reduction of the ranks' contributions, word by word (__u64).
 *
 * The leader keeps each follower's latest contribution sparsely: only the entries that
 * rank contributed (non-zero), sorted by index. A policy touches a handful of entries per
 * rank (the size buckets its collectives use), so the leader's memory and the work per
 * epoch grow with ranks x touched entries, not ranks x max_entries: 10,000 ranks of
 * adaptive_channels (41 KiB views) need a few MiB, not 400 (docs/agreement.md "Scale").
 * An entry that is all zero in a rank's view was not contributed by that rank and takes
 * no part in MIN / MAX / MEAN / SUM (policy.h "agreed maps"). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree_internal.h"
#include "ncclbpf/policy.h"

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

void agree_sparse_free(struct agree_sparse *v)
{
	free(v->idx);
	free(v->vals);
	memset(v, 0, sizeof(*v));
}

/* First position with idx >= key. */
static uint32_t lower_bound(const struct agree_sparse *v, uint32_t key)
{
	uint32_t lo = 0, hi = v->n;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (v->idx[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int agree_sparse_set(struct agree_sparse *v, uint32_t value_size, uint32_t key,
		     const uint8_t *value)
{
	uint32_t pos = lower_bound(v, key);
	bool found = pos < v->n && v->idx[pos] == key;
	if (all_zero(value, value_size)) { /* no longer contributed */
		if (found) {
			memmove(v->idx + pos, v->idx + pos + 1, (v->n - pos - 1) * sizeof(uint32_t));
			memmove(v->vals + (size_t)pos * value_size, v->vals + (size_t)(pos + 1) * value_size,
				(size_t)(v->n - pos - 1) * value_size);
			v->n--;
		}
		return 0;
	}
	if (!found) {
		if (v->n == v->cap) {
			uint32_t cap = v->cap ? v->cap * 2 : 4;
			uint32_t *ni = realloc(v->idx, cap * sizeof(uint32_t));
			if (!ni)
				return -ENOMEM;
			v->idx = ni;
			uint8_t *nv = realloc(v->vals, (size_t)cap * value_size);
			if (!nv)
				return -ENOMEM;
			v->vals = nv;
			v->cap = cap;
		}
		memmove(v->idx + pos + 1, v->idx + pos, (v->n - pos) * sizeof(uint32_t));
		memmove(v->vals + (size_t)(pos + 1) * value_size, v->vals + (size_t)pos * value_size,
			(size_t)(v->n - pos) * value_size);
		v->idx[pos] = key;
		v->n++;
	}
	memcpy(v->vals + (size_t)pos * value_size, value, value_size);
	return 0;
}

static void combine(uint32_t op, uint64_t *o, const uint8_t *val, uint32_t words, bool first)
{
	for (uint32_t w = 0; w < words; w++) {
		uint64_t x;
		memcpy(&x, val + (size_t)w * 8, 8);
		switch (op) {
		case NCCLBPF_AGREE_MIN: o[w] = first || x < o[w] ? x : o[w]; break;
		case NCCLBPF_AGREE_MAX: o[w] = x > o[w] ? x : o[w]; break;
		default: o[w] += x; break; /* SUM, MEAN */
		}
	}
}

void agree_reduce(const struct nb_map_agreed_desc *d, uint8_t *out, uint32_t *cnt,
		  const uint8_t *self, const struct agree_sparse *views, uint32_t n_views)
{
	uint32_t words = d->value_size / 8;
	memset(out, 0, (size_t)d->stride * d->max_entries);
	if (d->op == NCCLBPF_AGREE_LEADER) {
		if (self)
			memcpy(out, self, (size_t)d->stride * d->max_entries);
		return;
	}
	memset(cnt, 0, d->max_entries * sizeof(uint32_t));
	if (self)
		for (uint32_t i = 0; i < d->max_entries; i++) {
			const uint8_t *e = self + (size_t)i * d->stride;
			if (all_zero(e, d->value_size))
				continue;
			combine(d->op, (uint64_t *)(void *)(out + (size_t)i * d->stride), e, words,
				cnt[i]++ == 0);
		}
	for (uint32_t r = 0; r < n_views; r++) {
		const struct agree_sparse *v = &views[r];
		for (uint32_t k = 0; k < v->n; k++) {
			uint32_t i = v->idx[k];
			if (i >= d->max_entries)
				continue; /* checked on receipt; never trust twice-removed data */
			combine(d->op, (uint64_t *)(void *)(out + (size_t)i * d->stride),
				v->vals + (size_t)k * d->value_size, words, cnt[i]++ == 0);
		}
	}
	if (d->op == NCCLBPF_AGREE_MEAN)
		for (uint32_t i = 0; i < d->max_entries; i++)
			if (cnt[i] > 1) {
				uint64_t *o = (uint64_t *)(void *)(out + (size_t)i * d->stride);
				for (uint32_t w = 0; w < words; w++)
					o[w] /= cnt[i];
			}
}

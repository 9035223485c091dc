/* agree: the leader's reduction of the ranks' contributions, word by word (__u64).
 * An entry that is all zero in a rank's view was not contributed by that rank and takes
 * no part in MIN / MAX / MEAN / SUM (policy.h "agreed maps"). */
#include <string.h>

#include "agree/agree_internal.h"
#include "ncclbpf/policy.h"

static bool entry_present(const uint64_t *e, uint32_t words)
{
	for (uint32_t w = 0; w < words; w++)
		if (e[w])
			return true;
	return false;
}

void agree_reduce(const struct nb_map_agreed_desc *d, uint8_t *out, const uint8_t *views,
		  size_t bytes, uint32_t n_views, uint32_t leader_index)
{
	uint32_t words = d->value_size / 8, stride_w = d->stride / 8;
	memset(out, 0, bytes);
	if (d->op == NCCLBPF_AGREE_LEADER) {
		memcpy(out, views + (size_t)leader_index * bytes, bytes);
		return;
	}
	for (uint32_t i = 0; i < d->max_entries; i++) {
		uint64_t *o = (uint64_t *)(void *)(out + (size_t)i * d->stride);
		uint32_t n = 0;
		for (uint32_t r = 0; r < n_views; r++) {
			const uint64_t *e = (const uint64_t *)(const void *)(views + (size_t)r * bytes) +
					    (size_t)i * stride_w;
			if (!entry_present(e, words))
				continue;
			for (uint32_t w = 0; w < words; w++) {
				uint64_t x = e[w];
				switch (d->op) {
				case NCCLBPF_AGREE_MIN: o[w] = n == 0 || x < o[w] ? x : o[w]; break;
				case NCCLBPF_AGREE_MAX: o[w] = x > o[w] ? x : o[w]; break;
				default: o[w] += x; break; /* SUM, MEAN */
				}
			}
			n++;
		}
		if (d->op == NCCLBPF_AGREE_MEAN && n > 1)
			for (uint32_t w = 0; w < words; w++)
				o[w] /= n;
	}
}

/* Built-in latency statistics per (communicator, collective type, size bucket):
 * count, last, EWMA (alpha 1/8), min, a streaming p99 estimate, and the channel count of
 * the last sample. The sample is the GPU execution time when KernelCh timestamps exist,
 * else the host enqueue-to-completion time. Each context keeps the authoritative copy
 * (a tiny per-entry spin lock taken once per completed collective, never per event) and
 * publishes it to the process-wide pinned hash map "ncclbpf_latency" that tuner policies
 * bind to by name (NCCLBPF_LATENCY_MAP in policy.h).
 *
 * p99 estimator: a "frugal" stochastic quantile tracker. Each sample moves the estimate
 * q up by 99*d/100 when x > q and down by d/100 otherwise, with d = max(q/16, 100) ns. At
 * equilibrium P(x > q) * 99 = P(x <= q) * 1, i.e. q sits at the 99th percentile. It needs
 * O(1) memory, reacts upward within a few samples of a shift and decays slowly (a p99
 * should). */
#include <errno.h>
#include <string.h>

#include "maps/map.h"
#include "plugin/profiler/profiler.h"
#include "runtime/runtime.h"

static struct nb_map *_Atomic latency_map;
static _Atomic int latency_map_state; /* 0 untried, 1 ok, 2 failed */

void profiler_latency_map_init(void)
{
	if (atomic_load_explicit(&latency_map_state, memory_order_acquire))
		return;
	char err[256] = "";
	struct nb_map *m = runtime_pinned_map(runtime_builtin_pinned("ncclbpf_latency"), err,
					      sizeof(err));
	if (m) {
		atomic_store_explicit(&latency_map, m, memory_order_release);
		atomic_store_explicit(&latency_map_state, 1, memory_order_release);
	} else {
		int expect = 0;
		if (atomic_compare_exchange_strong(&latency_map_state, &expect, 2))
			runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
				    "profiler: cannot create the ncclbpf_latency map: %s", err);
	}
}

uint64_t profiler_p99_step(uint64_t q, uint64_t x)
{
	uint64_t d = q / 16;
	if (d < 100)
		d = 100; /* floor keeps the down step >= 1 ns for sub-1.6 us latencies */
	if (x > q)
		return q + d * 99 / 100;
	uint64_t down = d / 100;
	return q > down ? q - down : 0;
}

static void stats_add(struct ncclbpf_latency_stats *s, uint64_t x, uint32_t n_ch)
{
	if (s->count == 0) {
		s->ewma_ns = x;
		s->min_ns = x;
		s->p99_ns = x;
	} else {
		int64_t diff = (int64_t)x - (int64_t)s->ewma_ns;
		s->ewma_ns = (uint64_t)((int64_t)s->ewma_ns + diff / 8);
		if (x < s->min_ns)
			s->min_ns = x;
		s->p99_ns = profiler_p99_step(s->p99_ns, x);
	}
	s->count++;
	s->last_ns = x;
	s->n_channels_last = n_ch;
}

void profiler_latency_update(struct profiler_ctx *c, const struct ncclbpf_profiler_ctx *pc)
{
	if (pc->coll_type >= NCCLBPF_NUM_COLLS || pc->size_bucket > 64)
		return;
	uint64_t x = pc->gpu_ns ? pc->gpu_ns : pc->host_ns;
	struct profiler_stat_slot *slot = &c->stats[pc->coll_type][pc->size_bucket];
	while (atomic_flag_test_and_set_explicit(&slot->lock, memory_order_acquire))
		;
	stats_add(&slot->s, x, pc->n_channels);
	struct ncclbpf_latency_stats copy = slot->s;
	atomic_flag_clear_explicit(&slot->lock, memory_order_release);

	struct nb_map *m = atomic_load_explicit(&latency_map, memory_order_acquire);
	if (!m)
		return;
	struct ncclbpf_latency_key key;
	memset(&key, 0, sizeof(key));
	key.comm_id = pc->comm_id;
	key.coll_type = pc->coll_type;
	key.size_bucket = pc->size_bucket;
	map_epoch_enter();
	void *v = map_lookup(m, &key);
	if (v)
		memcpy(v, &copy, sizeof(copy)); /* in place, as a BPF program would */
	else
		map_update(m, &key, &copy, NB_ANY);
	map_epoch_exit();
}

int profiler_latency_get(uint64_t comm_id, uint32_t coll_type, uint32_t bucket,
			 struct ncclbpf_latency_stats *out)
{
	if (coll_type >= NCCLBPF_NUM_COLLS || bucket > 64)
		return -EINVAL;
	struct profiler_ctx *c = profiler_ctx_find(comm_id);
	if (!c)
		return -ENOENT;
	struct profiler_stat_slot *slot = &c->stats[coll_type][bucket];
	while (atomic_flag_test_and_set_explicit(&slot->lock, memory_order_acquire))
		;
	*out = slot->s;
	atomic_flag_clear_explicit(&slot->lock, memory_order_release);
	return out->count ? 0 : -ENOENT;
}

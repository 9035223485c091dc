/* Per-collective timing. A Coll event's stop only means "enqueued": the collective is
 * complete when its own stop and every counted child (the nChannels KernelCh events that
 * the activation mask promises, plus ProxyOps) have finished. The last reference to drop
 * builds struct ncclbpf_profiler_ctx, runs the profiler programs on a read-only copy,
 * updates the latency statistics and the learned channel count, and frees the slot. */
#include <string.h>

#include "agree/agree.h"
#include "plugin/comm_channels.h"
#include "plugin/metrics/metrics.h"
#include "plugin/otlp/otlp.h"
#include "plugin/profiler/profiler.h"
#include "plugin/provenance.h"
#include "runtime/runtime.h"

_Atomic uint64_t profiler_cnt_completed, profiler_cnt_faults;

static _Atomic(profiler_observer_fn) observer_fn;
static void *_Atomic observer_arg;

void profiler_set_observer(profiler_observer_fn fn, void *arg)
{
	atomic_store(&observer_arg, arg);
	atomic_store(&observer_fn, fn);
}

/* A policy's "label@version" as a JSON string body: the label is a file name, so quotes,
 * backslashes and control bytes become '_' (tracing formats on NCCL's threads anyway). */
static const char *trace_policy_name(uint32_t policy, char *buf, size_t len)
{
	nb_policy_name(policy, buf, len);
	for (char *q = buf; *q; q++)
		if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
			*q = '_';
	return buf;
}

static void coll_complete(struct profiler_event *e)
{
	struct profiler_ctx *c = e->ctx;
	uint64_t stop = atomic_load_explicit(&e->stop_ns, memory_order_acquire);
	uint64_t done = atomic_load_explicit(&e->done_ns, memory_order_acquire);
	uint64_t end = stop > done ? stop : done;
	uint64_t g0 = atomic_load_explicit(&e->gpu_start_min, memory_order_acquire);
	uint64_t g1 = atomic_load_explicit(&e->gpu_stop_max, memory_order_acquire);

	struct ncclbpf_profiler_ctx pc;
	memset(&pc, 0, sizeof(pc));
	unsigned src = NB_DSRC_UNKNOWN;
	uint32_t policy = 0;
	pc.comm_id = c->comm_id;
	pc.seq = e->seq;
	pc.n_bytes = e->n_bytes;
	pc.start_ns = e->start_ns;
	pc.host_ns = end > e->start_ns ? end - e->start_ns : 0;
	pc.gpu_ns = (g0 != UINT64_MAX && g1 > g0) ? g1 - g0 : 0;
	pc.coll_type = e->coll_type >= 0 ? (uint32_t)e->coll_type : UINT32_MAX;
	pc.algo = e->algo;
	pc.proto = e->proto;
	pc.n_channels = e->n_channels > 0 ? (uint32_t)e->n_channels : 0;
	pc.rank = (uint32_t)c->rank;
	pc.n_ranks = (uint32_t)c->n_ranks;
	pc.n_nodes = (uint32_t)c->n_nodes;
	pc.size_bucket = ncclbpf_size_bucket(e->n_bytes);
	pc.user_tag = e->user_tag;
	pc.flags = (pc.gpu_ns ? NCCLBPF_PROF_F_GPU_TIMED : 0) |
		   (e->is_sym ? NCCLBPF_PROF_F_SYMMETRIC : 0);
	pc.comm_seq = e->comm_seq;
	pc.band_seq = e->band_seq;
	pc.api_ns = e->api_ns;
	if (pc.gpu_ns) {
		pc.gpu_start_ns = profiler_gpu_to_host(c, g0);
		pc.gpu_end_ns = profiler_gpu_to_host(c, g1);
	}
	for (int i = 0; i < 3; i++) {
		pc.phase_ns[i] = atomic_load_explicit(&e->phase_max[i], memory_order_relaxed);
		if (pc.phase_ns[i])
			pc.flags |= NCCLBPF_PROF_F_PHASES;
	}

	if (e->coll_type >= 0 && e->coll_type < NCCLBPF_NUM_COLLS) {
		const struct nb_hook_chain *chain = runtime_chain_enter(NB_HOOK_PROFILER);
		/* profiler programs write rank-local state only: no activation gate needed,
		 * but a gated chain's new programs start with the communicator's switch */
		chain = runtime_chain_for(chain, pc.comm_id, pc.seq);
		if (chain) {
			/* programs get a copy: even a faulting one cannot change what we record */
			struct ncclbpf_profiler_ctx ro = pc;
			/* writes to agreed maps go to this comm's local contribution */
			agree_profiler_begin(pc.comm_id);
			int faults = runtime_chain_run(chain, &ro, sizeof(ro));
			agree_profiler_end();
			if (faults)
				atomic_fetch_add_explicit(&profiler_cnt_faults, (uint64_t)faults,
							  memory_order_relaxed);
		}
		runtime_chain_exit();
		/* Instrumented collectives (completed by their KernelCh events: GPU time, or
		 * host time to the last KernelCh stop on v3), and every collective where this
		 * context never gets KernelCh (v1/v2, Coll-only mask). A sampled-out collective's
		 * host time is its enqueue time, not a latency: it stays out of the stats. */
		bool timed = e->expect_kch > 0 || !(c->mask & NB_PROF_KERNEL_CH);
		if (timed)
			profiler_latency_update(c, &pc);
		/* who decided it (the tuner's record; only looked up for its consumers) */
		bool spans = otlp_traces_enabled() && (pc.flags & NCCLBPF_PROF_F_GPU_TIMED);
		if (c->metrics || c->trace || spans)
			prov_lookup(pc.comm_id, pc.coll_type, pc.seq, pc.n_bytes, &src, &policy);
		if (c->metrics)
			metrics_observe(c->metrics, &pc, timed, pc.gpu_ns ? pc.gpu_ns : pc.host_ns, src,
					policy);
		if (spans)
			otlp_span_submit(&pc, src, policy);
	}
	if (pc.n_channels)
		comm_channels_record(pc.comm_id, (int)pc.n_channels);
	atomic_fetch_add_explicit(&c->completed, 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&profiler_cnt_completed, 1, memory_order_relaxed);
	char pname[160];
	if (c->trace)
		trace_writer_line("{\"ev\":\"coll_done\",\"t\":%llu,\"id\":\"0x%llx\",\"ctx\":%u,"
				  "\"comm\":\"0x%llx\",\"seq\":%llu,\"coll\":%d,\"bytes\":%llu,"
				  "\"algo\":%d,\"proto\":%d,\"nch\":%u,\"rank\":%u,\"start\":%llu,"
				  "\"host_ns\":%llu,\"gpu_ns\":%llu,\"gpu_start\":%llu,\"tag\":%llu,"
				  "\"src\":\"%s\",\"policy\":\"%s\",\"cseq\":%llu,\"bseq\":%llu,\"api\":%llu,"
				  "\"ph0\":%llu,\"ph1\":%llu,\"ph2\":%llu}",
				  (unsigned long long)end, (unsigned long long)e->token, c->index,
				  (unsigned long long)pc.comm_id, (unsigned long long)pc.seq,
				  e->coll_type, (unsigned long long)pc.n_bytes, pc.algo, pc.proto,
				  pc.n_channels, pc.rank, (unsigned long long)pc.start_ns,
				  (unsigned long long)pc.host_ns, (unsigned long long)pc.gpu_ns,
				  (unsigned long long)profiler_gpu_to_host(
					  c, g0 != UINT64_MAX ? g0 : 0),
				  (unsigned long long)pc.user_tag, nb_dsrc_name(src),
				  trace_policy_name(policy, pname, sizeof(pname)),
				  (unsigned long long)pc.comm_seq, (unsigned long long)pc.band_seq,
				  (unsigned long long)pc.api_ns,
				  (unsigned long long)pc.phase_ns[0], (unsigned long long)pc.phase_ns[1],
				  (unsigned long long)pc.phase_ns[2]);
	if (c->trace)
		trace_writer_flush_periodic(end);
	profiler_observer_fn fn = atomic_load_explicit(&observer_fn, memory_order_acquire);
	if (fn)
		fn(&pc, atomic_load_explicit(&observer_arg, memory_order_relaxed));
}

void profiler_coll_release(struct profiler_event *e, uint64_t host_ns)
{
	uint64_t tok = e->token;
	if (atomic_fetch_sub_explicit(&e->pending, 1, memory_order_acq_rel) != 1)
		return;
	/* the last reference: the collective completes now */
	atomic_store_explicit(&e->done_ns, host_ns ? host_ns : profiler_now_ns(),
			      memory_order_relaxed);
	if (e->ctx)
		coll_complete(e);
	struct profiler_pool *pool = profiler_pool_of(e);
	if (pool)
		profiler_pool_free(pool, e, tok);
}

/* A collective whose promised KernelCh events never all arrive (a NCCL that emits fewer
 * than nChannels, or stops lost in a crash of the proxy) would hold its slot forever. When
 * a pool runs dry, collectives pending for longer than this are completed with what they
 * have and their slots reclaimed. */
static _Atomic uint64_t stale_after_ns = 5000000000ull;

void profiler_set_stale_ns(uint64_t ns)
{
	atomic_store(&stale_after_ns, ns);
}

uint32_t profiler_reclaim_stale(struct profiler_ctx *c, uint64_t now)
{
	uint64_t age = atomic_load_explicit(&stale_after_ns, memory_order_relaxed);
	uint32_t n = 0;
	/* Called when the pool is dry, i.e. on every start event while it stays dry: scan the
	 * pool at most once per min(age, 10 ms), by one thread (others just drop the event). */
	uint64_t interval = age < 10000000ull ? age : 10000000ull;
	uint64_t last = atomic_load_explicit(&c->last_reclaim_ns, memory_order_relaxed);
	if (interval && last && now - last < interval)
		return 0;
	if (!atomic_compare_exchange_strong_explicit(&c->last_reclaim_ns, &last, now,
						     memory_order_relaxed, memory_order_relaxed))
		return 0;
	for (uint32_t i = 0; i < c->pool.cap; i++) {
		struct profiler_event *e = &c->pool.slots[i];
		uint32_t g = atomic_load_explicit(&e->gen, memory_order_acquire);
		if (!(g & 1) || e->type != NB_PROF_COLL || e->ctx != c || now - e->start_ns < age ||
		    profiler_event_decode(e->token) != e)
			continue;
		/* take every outstanding reference at once; a racing child release loses */
		int32_t p = atomic_load_explicit(&e->pending, memory_order_acquire);
		while (p > 0 && !atomic_compare_exchange_weak_explicit(&e->pending, &p, 1,
								       memory_order_acq_rel,
								       memory_order_acquire))
			;
		if (p <= 0)
			continue;
		uint64_t zero = 0;
		atomic_compare_exchange_strong(&e->stop_ns, &zero, now);
		profiler_coll_release(e, now);
		n++;
	}
	return n;
}

/* Profiler shim core: per-communicator contexts, the process-wide mode, and the
 * version-neutral startEvent / stopEvent / recordEventState / finalize. No lock and no
 * allocation on the event path: events come from the context's pool, handles are tokens
 * (profiler.h), and collective completion is reference counted (profiler_timing.c). */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agree/agree.h"
#include "plugin/chain/chain.h"
#include "plugin/metrics/metrics.h"
#include "plugin/otlp/otlp.h"
#include "plugin/profiler/profiler.h"
#include "runtime/control.h"
#include "runtime/runtime.h"

static _Atomic(struct profiler_ctx *) ctx_table[PROFILER_MAX_POOLS];
static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t ctx_next_index = 1; /* 0 is the detached pool */
static uint32_t ctx_free[PROFILER_MAX_POOLS];
static uint32_t ctx_free_cnt;
static struct profiler_pool detached_pool;
/* set once under ctx_lock, read on callback threads without it */
static _Atomic bool detached_ready;

static _Atomic int process_mode = -1;

struct profiler_retired {
	struct profiler_event *slots;
	struct profiler_retired *next;
};
static struct profiler_retired *retired_pools; /* under ctx_lock; kept reachable */

static _Atomic uint64_t cnt_dropped_pool, cnt_dropped_ctx, cnt_detached, cnt_stale, cnt_null;
extern _Atomic uint64_t profiler_cnt_completed, profiler_cnt_faults;

/* Disabled context: a context token that never decodes (index 0 is not a context). */
#define PROFILER_DISABLED_CTX ((void *)(uintptr_t)3u)
/* Handle for a GroupApi start outside the mask we asked for (NCCL calls startEvent for it
 * whenever Coll is enabled): non-NULL so that NCCL calls its stop, which ends the thread's
 * "mask read at this group" window; never decodes as an event or a context. */
#define PROFILER_API_MARK ((uint64_t)0xbu)

/* getpid() is a system call (hundreds of ns on VMs): cache it, reset in forked children. */
static _Atomic pid_t cached_pid;
static void pid_atfork_child(void)
{
	atomic_store(&cached_pid, 0);
}
static pid_t my_pid(void)
{
	pid_t p = atomic_load_explicit(&cached_pid, memory_order_relaxed);
	if (!p) {
		p = getpid();
		atomic_store_explicit(&cached_pid, p, memory_order_relaxed);
	}
	return p;
}

uint64_t profiler_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int mode_from_env(void)
{
	const char *e = getenv("NCCLBPF_PROFILE");
	if (e && *e) {
		if (runtime_env_parse_bool(e) == 0) /* off, 0, no, false */
			return PROFILER_MODE_OFF;
		if (!strcmp(e, "coll"))
			return PROFILER_MODE_COLL;
		if (!strcmp(e, "full"))
			return PROFILER_MODE_FULL;
		runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
			    "NCCLBPF_PROFILE=%s not understood (off|coll|full): using default", e);
	}
	const char *t = getenv("NCCLBPF_TRACE");
	if (t && *t)
		return PROFILER_MODE_FULL;
	/* per-collective metrics and spans need the completions */
	if (metrics_enabled() || otlp_traces_enabled())
		return PROFILER_MODE_COLL;
	runtime_load_policies_from_env();
	if (runtime_hook_chain(NB_HOOK_PROFILER) || runtime_find_map("ncclbpf_latency"))
		return PROFILER_MODE_COLL;
	/* reloads activated through the agreement layer need its group, which forms once the
	 * profiler has told it the rank (tuner_reload.c) */
	if (runtime_env_bool("NCCLBPF_RELOAD_AGREE", false))
		return PROFILER_MODE_COLL;
	return PROFILER_MODE_OFF;
}

/* NCCLBPF_PROFILE_PHASES=1: kernel phases in coll mode (NCCL 2.31+, profiler v7). Off by
 * default: NCCL 2.31.2 stamps phases with a system-wide fence per channel (issue #2355:
 * ~10 % on a 1 MB AllReduce). Read once per process. */
static _Atomic int phases_env = -1;
bool profiler_phases_wanted(void)
{
	int v = atomic_load_explicit(&phases_env, memory_order_relaxed);
	if (v < 0) {
		const char *e = getenv("NCCLBPF_PROFILE_PHASES");
		v = e && !strcmp(e, "1");
		if (e && *e && strcmp(e, "0") && strcmp(e, "1"))
			runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
				    "NCCLBPF_PROFILE_PHASES=%s not understood (0 or 1): using 0", e);
		atomic_store_explicit(&phases_env, v, memory_order_relaxed);
	}
	return v;
}

int profiler_process_mode(void)
{
	int m = atomic_load_explicit(&process_mode, memory_order_acquire);
	if (m >= 0)
		return m;
	int want = mode_from_env();
	int expect = -1;
	if (!atomic_compare_exchange_strong(&process_mode, &expect, want))
		return expect;
	return want;
}

void profiler_reset_mode_for_tests(void)
{
	atomic_store(&process_mode, -1);
	atomic_store(&phases_env, -1);
}

static uint32_t mask_for(int mode, int version)
{
	if (mode == PROFILER_MODE_OFF)
		return 0;
	if (mode == PROFILER_MODE_FULL)
		return version >= 7 ? NB_PROF_ALL_V7
		       : version == 6 ? NB_PROF_ALL_V6
		       : version == 5 ? NB_PROF_ALL_V5
		       : version >= 3 ? NB_PROF_ALL_V3
				      : NB_PROF_ALL_V1;
	/* coll: Coll + KernelCh (completion and GPU time). v1/v2 have no KernelCh: timing
	 * is enqueue-only there (the number of ProxyOps to wait for is unknowable). v7 with
	 * NCCLBPF_PROFILE_PHASES=1: KernelPhase too, on the collectives that carry KernelCh
	 * (the sampler switches both bits together). */
	if (version >= 7 && profiler_phases_wanted())
		return NB_PROF_COLL | NB_PROF_KERNEL_CH | NB_PROF_KERNEL_PHASE;
	return version >= 3 ? (NB_PROF_COLL | NB_PROF_KERNEL_CH) : NB_PROF_COLL;
}

/* NCCLBPF_PROFILE_MASK: an explicit NCCL event mask (e.g. 0x2 = Coll only), to trade detail
 * for overhead or to measure what each event type costs. Bits the ABI version does not know
 * are dropped; without KernelCh a collective is timed from enqueue to its Coll stop only (no
 * completion, no GPU time). Ignored in off mode. */
static uint32_t mask_with_override(int mode, int version)
{
	uint32_t m = mask_for(mode, version);
	const char *e = getenv("NCCLBPF_PROFILE_MASK");
	if (mode == PROFILER_MODE_OFF || !e || !*e)
		return m;
	char *end = NULL;
	unsigned long v = strtoul(e, &end, 0);
	uint32_t all = mask_for(PROFILER_MODE_FULL, version);
	if (!end || *end || v == 0 || v > 0xffffffffu) {
		runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
			    "NCCLBPF_PROFILE_MASK=%s not understood (a non-zero event mask such as "
			    "0x42): using 0x%x", e, m);
		return m;
	}
	if ((uint32_t)v & ~all)
		runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
			    "NCCLBPF_PROFILE_MASK=%s: bits 0x%x are not events of profiler v%d, "
			    "dropped", e, (unsigned)((uint32_t)v & ~all), version);
	return (uint32_t)v & all;
}

static uint32_t pool_cap_from_env(int mode)
{
	const char *e = getenv("NCCLBPF_PROFILE_POOL");
	if (e && *e) {
		long v = strtol(e, NULL, 10);
		if (v >= 16 && v <= (long)PROFILER_MAX_SLOTS)
			return (uint32_t)v;
		runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
			    "NCCLBPF_PROFILE_POOL=%s out of range 16..%u: using default", e,
			    PROFILER_MAX_SLOTS);
	}
	return mode == PROFILER_MODE_FULL ? 16384 : 4096;
}

struct profiler_ctx *profiler_ctx_decode(uint64_t t)
{
	if ((t & 3u) != 3u)
		return NULL;
	uint32_t idx = (uint32_t)(t >> 22) & (PROFILER_MAX_POOLS - 1);
	uint32_t gen = (uint32_t)(t >> 34) & PROFILER_GEN_MASK;
	if (idx == 0 || !(gen & 1))
		return NULL;
	struct profiler_ctx *c = atomic_load_explicit(&ctx_table[idx], memory_order_acquire);
	if (!c || (atomic_load_explicit(&c->gen, memory_order_acquire) & PROFILER_GEN_MASK) != gen)
		return NULL;
	return c;
}

/* Allocates (or recycles) a context slot; pools of recycled contexts are kept, so memory
 * that a late callback might decode into is never unmapped. Called with ctx_lock held. */
/* Under PXN a ProxyStep can arrive with another process's context, an opaque token. Every
 * process would hand out the same first tokens if generations started at 0; a per-process
 * random even start makes a foreign token decode as local only by a 1-in-2^29 accident. */
static uint32_t random_even_gen(uint32_t index)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t x = ((uint64_t)getpid() << 32) ^ (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec ^
		     ((uint64_t)index * 0x9e3779b97f4a7c15ull);
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (uint32_t)x & PROFILER_GEN_MASK & ~1u;
}

static struct profiler_ctx *ctx_alloc(uint32_t cap)
{
	struct profiler_ctx *c;
	if (ctx_free_cnt) {
		uint32_t idx = ctx_free[--ctx_free_cnt];
		c = atomic_load(&ctx_table[idx]);
		if (c->pool.cap != cap) {
			/* another pool size: the old pool is retired, never unmapped (late
			 * callbacks may still decode into it; tokens are bounds-checked) */
			struct profiler_retired *r = malloc(sizeof(*r));
			struct profiler_pool fresh;
			if (r && profiler_pool_init(&fresh, idx, cap) == 0) {
				r->slots = c->pool.slots;
				r->next = retired_pools;
				retired_pools = r;
				c->pool.slots = fresh.slots;
				c->pool.cap = fresh.cap;
				atomic_store(&c->pool.head, atomic_load(&fresh.head));
				atomic_store(&c->pool.in_use, 0);
			} else {
				free(r);
			}
		}
		return c;
	}
	if (ctx_next_index >= PROFILER_MAX_POOLS)
		return NULL;
	/* cache-line aligned: the context separates the fields each thread writes (profiler.h) */
	c = aligned_alloc(64, sizeof(*c));
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->index = ctx_next_index;
	atomic_store(&c->gen, random_even_gen(c->index));
	if (profiler_pool_init(&c->pool, c->index, cap)) {
		free(c);
		return NULL;
	}
	ctx_next_index++;
	profiler_pool_register(&c->pool);
	atomic_store_explicit(&ctx_table[c->index], c, memory_order_release);
	return c;
}

static void ctx_reset_stats(struct profiler_ctx *c)
{
	c->coll_started = 0;
	memset(c->band_started, 0, sizeof(c->band_started));
	for (int t = 0; t < NCCLBPF_NUM_COLLS; t++)
		for (int b = 0; b < 65; b++) {
			atomic_flag_clear(&c->stats[t][b].lock);
			memset(&c->stats[t][b].s, 0, sizeof(c->stats[t][b].s));
		}
}

static bool profiler_null_mode(void);
/* set once some context got an inner plugin: the event path skips chaining before that */
static _Atomic bool chain_active;

/* `ncclbpf ctl status`: the profiler section (control thread). */
static void profiler_status(struct runtime_status_emit *e)
{
	struct profiler_counters pc;
	int m = atomic_load(&process_mode);
	profiler_get_counters(&pc);
	e->str(e, "mode", m == PROFILER_MODE_FULL ? "full" : m == PROFILER_MODE_COLL ? "coll"
			  : m == PROFILER_MODE_OFF ? "off" : "unset");
	e->u64(e, "completed", pc.completed);
	e->u64(e, "program_faults", pc.program_faults);
	e->u64(e, "dropped_pool", pc.dropped_pool);
	e->u64(e, "dropped_ctx", pc.dropped_ctx);
	e->u64(e, "detached", pc.detached);
	e->u64(e, "stale_handles", pc.stale_handles);
	e->u64(e, "null_handles", pc.null_handles);
}

int profiler_init(void **context, int *activation_mask, const struct profiler_init_args *a)
{
	if (!context)
		return NB_NCCL_SUCCESS;
	*context = PROFILER_DISABLED_CTX;
	if (a && a->logger)
		runtime_set_logger(a->logger);
	int mode = profiler_process_mode();
	int version = a ? a->version : 0;
	uint32_t mask = mask_with_override(mode, version);
	if (activation_mask)
		*activation_mask = (int)mask;
	const struct chain_profiler *inner = a ? chain_profiler_get() : NULL;
	if (inner && !chain_profiler_compatible(inner, version)) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_PROFILE,
			    "profiler: inner plugin (ncclProfiler_v%d) cannot be driven from NCCL's "
			    "v%d events (v1-v4 layouts differ): running without it",
			    chain_profiler_version(inner), version);
		inner = NULL;
	}
	if (!a || (mode == PROFILER_MODE_OFF && !inner)) {
		runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_PROFILE,
			    "profiler v%d: mode off for comm 0x%llx (NCCLBPF_PROFILE)", version,
			    a ? (unsigned long long)a->comm_id : 0ull);
		return NB_NCCL_SUCCESS;
	}
	uint32_t cap = pool_cap_from_env(mode);
	pthread_mutex_lock(&ctx_lock);
	static bool atfork_done;
	if (!atfork_done) {
		pthread_atfork(NULL, NULL, pid_atfork_child);
		atfork_done = true;
	}
	if (!atomic_load_explicit(&detached_ready, memory_order_relaxed) &&
	    profiler_pool_init(&detached_pool, 0, 4096) == 0) {
		profiler_pool_register(&detached_pool);
		atomic_store_explicit(&detached_ready, true, memory_order_release);
	}
	struct profiler_ctx *c = ctx_alloc(cap);
	if (c) {
		c->version = version;
		c->mode = mode;
		c->disabled = false;
		c->trace = trace_writer_enabled();
		c->comm_id = a->comm_id;
		snprintf(c->comm_name, sizeof(c->comm_name), "%s", a->comm_name ? a->comm_name : "");
		for (char *q = c->comm_name; *q; q++) /* it goes into JSON lines unescaped */
			if (*q == '"' || *q == '\\' || (unsigned char)*q < 0x20)
				*q = '_';
		c->rank = a->rank;
		c->n_ranks = a->n_ranks;
		c->n_nodes = a->n_nodes;
		c->mask = mask;
		c->log_tags = version >= 7 && agree_decision_log_enabled();
		c->metrics = mode != PROFILER_MODE_OFF
				     ? metrics_comm_open(a->comm_id, a->comm_name, a->rank, a->n_ranks)
				     : NULL;
		c->inner = NULL;
		c->inner_ctx = NULL;
		c->inner_mask = 0;
		if (inner) {
			bool ok;
			c->inner_ctx = chain_profiler_init(inner, &c->inner_mask, a->comm_id,
							   a->comm_name, a->n_nodes, a->n_ranks,
							   a->rank, a->logger, &ok);
			if (ok) {
				c->inner = inner;
				atomic_store(&chain_active, true);
				/* NCCL delivers what either plugin asked for; ours filters by c->mask */
				if (activation_mask)
					*activation_mask = (int)(mask | (uint32_t)c->inner_mask);
			}
		}
		/* sampling: coll mode, API events present (v5+, where the mask in force per call
		 * is read back exactly), no explicit NCCLBPF_PROFILE_MASK, and no inner plugin
		 * that wants KernelCh on every collective */
		const char *pm = getenv("NCCLBPF_PROFILE_MASK");
		profiler_sample_init(c, activation_mask,
				     mode == PROFILER_MODE_COLL && version >= 5 && !(pm && *pm) &&
					     !profiler_null_mode() && (mask & NB_PROF_KERNEL_CH) &&
					     !(c->inner_mask & (int)NB_PROF_KERNEL_CH));
		atomic_store(&c->gpu_offset, 0);
		atomic_store(&c->have_offset, false);
		atomic_store(&c->completed, 0);
		atomic_store(&c->last_reclaim_ns, 0);
		atomic_store(&c->dropped_children, 0);
		ctx_reset_stats(c);
		uint32_t g = atomic_load(&c->gen);
		atomic_store_explicit(&c->gen, (g + 1) & PROFILER_GEN_MASK, memory_order_release);
		c->token = 3u | ((uint64_t)c->index << 22) | ((uint64_t)((g + 1) & PROFILER_GEN_MASK) << 34);
		*context = (void *)(uintptr_t)c->token;
	}
	pthread_mutex_unlock(&ctx_lock);
	profiler_latency_map_init();
	if (c) /* the rank makes this process a member of the comm's agreement group */
		agree_comm_profiler_open(c->comm_id, c->rank, c->n_ranks);
	if (!c) {
		runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
			    "profiler: no context for comm 0x%llx (out of memory or %d contexts): "
			    "events of this communicator are ignored",
			    (unsigned long long)a->comm_id, PROFILER_MAX_POOLS - 1);
		return NB_NCCL_SUCCESS;
	}
	if (c->trace)
		trace_writer_line("{\"ev\":\"comm\",\"t\":%llu,\"ctx\":%u,\"comm\":\"0x%llx\","
				  "\"name\":\"%.48s\",\"rank\":%d,\"nranks\":%d,\"nnodes\":%d,"
				  "\"version\":%d,\"mode\":%d}",
				  (unsigned long long)profiler_now_ns(), c->index,
				  (unsigned long long)c->comm_id, c->comm_name, c->rank, c->n_ranks,
				  c->n_nodes, version, mode);
	runtime_status_provider("profiler", profiler_status);
	otlp_comm_open(c->comm_id, c->comm_name); /* starts the exporter when export is on */
	runtime_control_acquire(); /* released by finalize */
	runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_PROFILE,
		    "profiler v%d: comm 0x%llx rank %d/%d mode %s, event mask 0x%x, pool %u, "
		    "KernelCh %s",
		    version, (unsigned long long)c->comm_id, c->rank, c->n_ranks,
		    mode == PROFILER_MODE_FULL ? "full" : mode == PROFILER_MODE_COLL ? "coll" : "off (inner plugin only)",
		    c->mask, c->pool.cap,
		    !(c->mask & NB_PROF_KERNEL_CH) ? "off"
		    : c->sampler.on ? (c->sampler.fixed_n ? "sampled 1-in-N (fixed)"
						       : "sampled 1-in-N (adaptive)")
				    : "on every collective");
	return NB_NCCL_SUCCESS;
}

static bool inc_not_zero(_Atomic int32_t *v)
{
	int32_t cur = atomic_load_explicit(v, memory_order_relaxed);
	while (cur > 0)
		if (atomic_compare_exchange_weak_explicit(v, &cur, cur + 1, memory_order_acq_rel,
							  memory_order_relaxed))
			return true;
	return false;
}

void profiler_note_gpu_sample(struct profiler_ctx *c, uint64_t host_ns, uint64_t gpu_ns)
{
	/* The callback runs after the GPU event, so host - gpu over-estimates the offset by
	 * the notification delay; the minimum over samples is the tightest estimate. */
	int64_t off = (int64_t)(host_ns - gpu_ns);
	if (!atomic_load_explicit(&c->have_offset, memory_order_acquire)) {
		int64_t zero = 0;
		atomic_compare_exchange_strong(&c->gpu_offset, &zero, off);
		atomic_store_explicit(&c->have_offset, true, memory_order_release);
	}
	int64_t cur = atomic_load_explicit(&c->gpu_offset, memory_order_relaxed);
	while (off < cur &&
	       !atomic_compare_exchange_weak_explicit(&c->gpu_offset, &cur, off,
						      memory_order_relaxed, memory_order_relaxed))
		;
}

uint64_t profiler_gpu_to_host(const struct profiler_ctx *c, uint64_t gpu_ns)
{
	if (!gpu_ns || !c || !atomic_load_explicit(&c->have_offset, memory_order_acquire))
		return 0;
	return gpu_ns + (uint64_t)atomic_load_explicit(&c->gpu_offset, memory_order_relaxed);
}

static void trace_start(const struct profiler_ctx *c, const struct profiler_event *e,
			const struct profiler_desc *d, uint64_t now)
{
	uint64_t parent = e->parent_tok;
	if (e->flags & PROFILER_EV_DETACHED) {
		trace_writer_line("{\"ev\":\"start\",\"t\":%llu,\"id\":\"0x%llx\",\"type\":\"%s\","
				  "\"detached\":1,\"origin_pid\":%d,\"ch\":%d,\"peer\":%d}",
				  (unsigned long long)now, (unsigned long long)e->token,
				  profiler_event_name(e->type), (int)d->pid, d->channel, d->peer);
		return;
	}
	switch (e->type) {
	case NB_PROF_COLL:
		trace_writer_line("{\"ev\":\"start\",\"t\":%llu,\"id\":\"0x%llx\",\"parent\":\"0x%llx\","
				  "\"type\":\"Coll\",\"ctx\":%u,\"seq\":%llu,\"func\":\"%.32s\","
				  "\"bytes\":%llu,\"algo\":%d,\"proto\":%d,\"nch\":%d,\"tag\":%llu}",
				  (unsigned long long)now, (unsigned long long)e->token,
				  (unsigned long long)parent, c->index, (unsigned long long)e->seq,
				  d->func ? d->func : "?", (unsigned long long)e->n_bytes, e->algo,
				  e->proto, e->n_channels, (unsigned long long)e->user_tag);
		break;
	case NB_PROF_KERNEL_CH:
		trace_writer_line("{\"ev\":\"start\",\"t\":%llu,\"id\":\"0x%llx\",\"parent\":\"0x%llx\","
				  "\"type\":\"KernelCh\",\"ctx\":%u,\"ch\":%d,\"gpu\":%llu}",
				  (unsigned long long)now, (unsigned long long)e->token,
				  (unsigned long long)parent, c->index, e->channel,
				  (unsigned long long)profiler_gpu_to_host(c, e->gpu_start));
		break;
	case NB_PROF_KERNEL_PHASE:
		trace_writer_line("{\"ev\":\"start\",\"t\":%llu,\"id\":\"0x%llx\",\"parent\":\"0x%llx\","
				  "\"type\":\"KernelPhase\",\"ctx\":%u,\"ch\":%d,\"phase\":%d,"
				  "\"gpu\":%llu}",
				  (unsigned long long)now, (unsigned long long)e->token,
				  (unsigned long long)parent, c->index, e->channel, e->phase,
				  (unsigned long long)profiler_gpu_to_host(c, e->gpu_start));
		break;
	case NB_PROF_COLL_API:
	case NB_PROF_P2P_API:
	case NB_PROF_P2P:
		trace_writer_line("{\"ev\":\"start\",\"t\":%llu,\"id\":\"0x%llx\",\"parent\":\"0x%llx\","
				  "\"type\":\"%s\",\"ctx\":%u,\"func\":\"%.32s\",\"count\":%llu,"
				  "\"peer\":%d,\"tag\":%llu}",
				  (unsigned long long)now, (unsigned long long)e->token,
				  (unsigned long long)parent, profiler_event_name(e->type), c->index,
				  d->func ? d->func : "?", (unsigned long long)d->count, d->peer,
				  (unsigned long long)d->user_tag);
		break;
	default:
		trace_writer_line("{\"ev\":\"start\",\"t\":%llu,\"id\":\"0x%llx\",\"parent\":\"0x%llx\","
				  "\"type\":\"%s\",\"ctx\":%u,\"ch\":%d,\"peer\":%d,\"step\":%d}",
				  (unsigned long long)now, (unsigned long long)e->token,
				  (unsigned long long)parent, profiler_event_name(e->type), c->index,
				  d->channel, d->peer, d->step);
		break;
	}
}

/* A child that could not be allocated still "arrived": let its collective complete. */
static void account_dropped_child(struct profiler_event *parent, uint32_t type)
{
	if (!parent || parent->type != NB_PROF_COLL || type != NB_PROF_KERNEL_CH)
		return;
	uint32_t seen = atomic_fetch_add_explicit(&parent->kch_seen, 1, memory_order_relaxed);
	if (seen < parent->expect_kch)
		profiler_coll_release(parent, 0);
}

/* NCCLBPF_PROFILE_NULL=1 (measurement only): ask NCCL for the mode's events but return
 * from every callback at once, so a GPU run separates what NCCL's instrumentation costs from
 * what ncclbpf's callbacks cost. Read once per process. */
static _Atomic int null_mode = -1;
static bool profiler_null_mode(void)
{
	int m = atomic_load_explicit(&null_mode, memory_order_relaxed);
	if (m < 0) {
		m = runtime_env_bool("NCCLBPF_PROFILE_NULL", false);
		atomic_store_explicit(&null_mode, m, memory_order_relaxed);
		if (m)
			runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
				    "profiler: NCCLBPF_PROFILE_NULL set: events are requested "
				    "from NCCL and ignored (overhead measurement only)");
	}
	return m;
}

static int start_own(void *context, void **handle, const struct profiler_desc *d);

/* The inner plugin's handle of a parent token of c (NULL if none). */
static void *inner_of(const struct profiler_ctx *c, const void *parent_tok)
{
	if (!parent_tok)
		return NULL;
	struct profiler_event *p = profiler_event_decode((uint64_t)(uintptr_t)parent_tok);
	return p && p->ctx == c ? p->inner_handle : NULL;
}

int profiler_start(void *context, void **handle, const struct profiler_desc *d)
{
	if (!handle)
		return NB_NCCL_SUCCESS;
	*handle = NULL;
	if (!d || profiler_null_mode())
		return NB_NCCL_SUCCESS;
	/* chaining: the inner plugin first, with its own handles of the parents. Not for PXN
	 * events of another process (their context is not ours to decode). */
	void *ih = NULL;
	struct profiler_ctx *c = NULL;
	if (atomic_load_explicit(&chain_active, memory_order_relaxed) &&
	    !(d->type == NB_PROF_PROXY_OP && d->pid != my_pid())) {
		c = profiler_ctx_decode((uint64_t)(uintptr_t)context);
		if (c && c->inner && !c->disabled)
			ih = chain_profiler_start(c->inner, c->inner_ctx, d->raw, c->version, d->type,
						  inner_of(c, d->parent), inner_of(c, d->parent_group));
	}
	int rc = start_own(context, handle, d);
	if (!ih)
		return rc;
	struct profiler_event *e = profiler_event_decode((uint64_t)(uintptr_t)*handle);
	if (e && e->ctx == c) {
		e->inner_handle = ih;
		return rc;
	}
	/* ncclbpf keeps no event of this type: a carrier slot holds the inner handle */
	struct profiler_event *k = profiler_pool_alloc(&c->pool);
	if (!k) {
		atomic_fetch_add_explicit(&cnt_dropped_pool, 1, memory_order_relaxed);
		chain_profiler_stop(c->inner, ih); /* a zero-length event rather than a leak */
		return rc;
	}
	k->type = d->type;
	k->flags = PROFILER_EV_CARRIER;
	k->ctx = c;
	k->token = profiler_event_token(&c->pool, k);
	k->parent_tok = 0;
	k->inner_handle = ih;
	*handle = (void *)(uintptr_t)k->token;
	return rc;
}

static int start_own(void *context, void **handle, const struct profiler_desc *d)
{
	struct profiler_ctx *c = NULL;
	struct profiler_event *parent = NULL;
	bool detached = false;
	/* PXN: check the originator pid before touching context or parentObj. */
	if (d->type == NB_PROF_PROXY_OP && d->pid != my_pid()) {
		detached = true;
	} else if (d->type == NB_PROF_PROXY_STEP || d->type == NB_PROF_NET_PLUGIN) {
		parent = profiler_event_decode((uint64_t)(uintptr_t)d->parent);
		if (parent && (parent->flags & PROFILER_EV_DETACHED))
			detached = true;
	}
	struct profiler_pool *pool;
	if (detached) {
		if (!atomic_load_explicit(&detached_ready, memory_order_acquire)) {
			atomic_fetch_add_explicit(&cnt_dropped_ctx, 1, memory_order_relaxed);
			return NB_NCCL_SUCCESS;
		}
		pool = &detached_pool;
		parent = NULL;
		atomic_fetch_add_explicit(&cnt_detached, 1, memory_order_relaxed);
	} else {
		c = profiler_ctx_decode((uint64_t)(uintptr_t)context);
		/* the application's per-call tags, for the tuner's decision log (agree.h) */
		if (c && c->log_tags) {
			if (d->type == NB_PROF_GROUP_API)
				agree_log_call_group();
			else if (d->type == NB_PROF_COLL_API)
				agree_log_call_tag(c->comm_id, d->user_tag);
		}
		if (c && d->type == NB_PROF_GROUP_API) {
			/* NCCL just read its mask for the calls of this group; the application
			 * just called it (ncclbpf_profiler_ctx.api_ns of the group's collectives) */
			profiler_api_group_start(c, profiler_now_ns());
			if (!(c->mask & NB_PROF_GROUP_API)) {
				*handle = (void *)(uintptr_t)PROFILER_API_MARK;
				return NB_NCCL_SUCCESS;
			}
		}
		if (!c || c->disabled || !(c->mask & d->type)) {
			atomic_fetch_add_explicit(&cnt_dropped_ctx, 1, memory_order_relaxed);
			return NB_NCCL_SUCCESS;
		}
		pool = &c->pool;
		if (!parent && d->parent)
			parent = profiler_event_decode((uint64_t)(uintptr_t)d->parent);
		/* a carrier only holds an inner plugin's handle: not a parent of ours */
		if (parent && (parent->flags & PROFILER_EV_CARRIER))
			parent = NULL;
	}
	struct profiler_event *e = profiler_pool_alloc(pool);
	if (!e && c && profiler_reclaim_stale(c, profiler_now_ns()))
		e = profiler_pool_alloc(pool);
	if (!e) {
		atomic_fetch_add_explicit(&cnt_dropped_pool, 1, memory_order_relaxed);
		if (c)
			account_dropped_child(parent, d->type);
		return NB_NCCL_SUCCESS;
	}
	/* the clock is read only where it is used (a vDSO call can cost ~100 ns on a VM) */
	bool tracing = (c && c->trace) || (detached && trace_writer_enabled());
	bool need_now = tracing || d->type == NB_PROF_COLL;
	uint64_t now = need_now ? profiler_now_ns() : 0;
	e->type = d->type;
	e->flags = detached ? PROFILER_EV_DETACHED : 0;
	e->ctx = c;
	e->token = profiler_event_token(pool, e);
	e->parent_tok = parent ? parent->token : 0;
	e->start_ns = now;
	atomic_store_explicit(&e->stop_ns, 0, memory_order_relaxed);
	e->channel = d->channel;
	e->gpu_start = 0;
	e->gpu_stop = 0;
	e->inner_handle = NULL;
	if (!detached) {
		switch (d->type) {
		case NB_PROF_COLL: {
			/* v1..v3 init carries no communicator: learn it from the descriptor */
			if (c->version <= 3) {
				if (!c->comm_id && d->comm_hash)
					c->comm_id = d->comm_hash;
				if (c->rank < 0)
					c->rank = d->rank;
			}
			uint64_t bytes = d->count * (uint64_t)d->type_size;
			if (d->coll_type == NCCLBPF_COLL_ALLGATHER ||
			    d->coll_type == NCCLBPF_COLL_REDUCESCATTER)
				bytes *= (uint64_t)(c->n_ranks > 0 ? c->n_ranks : 1);
			e->seq = d->seq;
			e->comm_seq = c->coll_started;
			e->api_ns = profiler_api_ns();
			e->band_seq = 0;
			if (d->coll_type >= 0 && d->coll_type < NCCLBPF_NUM_COLLS) {
				c->coll_started++;
				e->band_seq = c->band_started[d->coll_type][ncclbpf_size_bucket(bytes)]++;
			}
			e->n_bytes = bytes;
			e->coll_type = d->coll_type;
			e->algo = d->algo;
			e->proto = d->proto;
			e->n_channels = d->n_channels;
			e->user_tag = d->user_tag;
			e->is_sym = d->is_sym;
			/* the mask NCCL used for this call, not the one we asked for: RAS, another
			 * communicator or the sampler may have changed it since init */
			e->expect_kch = (c->mask & NB_PROF_KERNEL_CH) &&
							(profiler_task_mask(c) & NB_PROF_KERNEL_CH) &&
							d->n_channels > 0
						? (uint32_t)d->n_channels : 0;
			profiler_sample_coll(c, ncclbpf_size_bucket(bytes), e->expect_kch > 0, now);
			atomic_store_explicit(&e->kch_seen, 0, memory_order_relaxed);
			atomic_store_explicit(&e->pending, 1 + (int32_t)e->expect_kch,
					      memory_order_relaxed);
			atomic_store_explicit(&e->gpu_start_min, UINT64_MAX, memory_order_relaxed);
			atomic_store_explicit(&e->gpu_stop_max, 0, memory_order_relaxed);
			atomic_store_explicit(&e->done_ns, 0, memory_order_relaxed);
			for (int i = 0; i < 3; i++)
				atomic_store_explicit(&e->phase_max[i], 0, memory_order_relaxed);
			break;
		}
		case NB_PROF_KERNEL_PHASE:
			/* parent: the channel's KernelCh event, whose parent is the collective */
			e->gpu_start = d->gpu_ts;
			e->phase = d->phase;
			break;
		case NB_PROF_KERNEL_CH:
			e->gpu_start = d->gpu_ts;
			if (parent && parent->type == NB_PROF_COLL) {
				uint32_t seen = atomic_fetch_add_explicit(&parent->kch_seen, 1,
									  memory_order_relaxed);
				/* one clock sample per collective refines the GPU->host offset */
				if (d->gpu_ts && (seen == 0 || need_now))
					profiler_note_gpu_sample(c, now ? now : profiler_now_ns(),
								 d->gpu_ts);
				if (seen < parent->expect_kch || inc_not_zero(&parent->pending))
					e->flags |= PROFILER_EV_COUNTED;
				if (d->gpu_ts) {
					uint64_t cur = atomic_load_explicit(&parent->gpu_start_min,
									    memory_order_relaxed);
					while (d->gpu_ts < cur &&
					       !atomic_compare_exchange_weak_explicit(
						       &parent->gpu_start_min, &cur, d->gpu_ts,
						       memory_order_relaxed, memory_order_relaxed))
						;
				}
			}
			break;
		case NB_PROF_PROXY_OP:
			if (parent && parent->type == NB_PROF_COLL && inc_not_zero(&parent->pending))
				e->flags |= PROFILER_EV_COUNTED;
			break;
		default:
			break;
		}
	}
	if (!parent && d->type == NB_PROF_KERNEL_CH && d->gpu_ts && !detached)
		profiler_note_gpu_sample(c, now ? now : profiler_now_ns(), d->gpu_ts);
	if (tracing)
		trace_start(c, e, d, now);
	*handle = (void *)(uintptr_t)e->token;
	return NB_NCCL_SUCCESS;
}

int profiler_stop(void *handle)
{
	if (!handle) {
		atomic_fetch_add_explicit(&cnt_null, 1, memory_order_relaxed);
		return NB_NCCL_SUCCESS;
	}
	uint64_t tok = (uint64_t)(uintptr_t)handle;
	if (tok == PROFILER_API_MARK) {
		profiler_api_group_stop();
		return NB_NCCL_SUCCESS;
	}
	struct profiler_event *e = profiler_event_decode(tok);
	if (!e) {
		atomic_fetch_add_explicit(&cnt_stale, 1, memory_order_relaxed);
		return NB_NCCL_SUCCESS;
	}
	if (e->type == NB_PROF_GROUP_API)
		profiler_api_group_stop();
	struct profiler_ctx *c = e->ctx;
	if (e->inner_handle && c && c->inner) {
		void *ih = e->inner_handle;
		e->inner_handle = NULL;
		chain_profiler_stop(c->inner, ih);
	}
	if (e->flags & PROFILER_EV_CARRIER) {
		struct profiler_pool *cp = profiler_pool_of(e);
		if (!cp || !profiler_pool_free(cp, e, tok))
			atomic_fetch_add_explicit(&cnt_stale, 1, memory_order_relaxed);
		return NB_NCCL_SUCCESS;
	}
	bool tracing = (c && c->trace) || (!c && trace_writer_enabled());
	/* children of a collective need no clock: its completion reads it once */
	uint64_t now = tracing || e->type == NB_PROF_COLL ? profiler_now_ns() : 0;
	if (tracing)
		trace_writer_line("{\"ev\":\"stop\",\"t\":%llu,\"id\":\"0x%llx\"}",
				  (unsigned long long)now, (unsigned long long)tok);
	if (e->type == NB_PROF_COLL && !(e->flags & PROFILER_EV_DETACHED)) {
		uint64_t zero = 0;
		/* the first stop only: a duplicate stop must not drop a second reference */
		if (atomic_compare_exchange_strong(&e->stop_ns, &zero, now))
			profiler_coll_release(e, now);
		return NB_NCCL_SUCCESS;
	}
	uint64_t parent_tok = e->parent_tok;
	bool counted = e->flags & PROFILER_EV_COUNTED;
	struct profiler_pool *pool = profiler_pool_of(e);
	if (!pool || !profiler_pool_free(pool, e, tok)) {
		atomic_fetch_add_explicit(&cnt_stale, 1, memory_order_relaxed);
		return NB_NCCL_SUCCESS;
	}
	if (counted) {
		struct profiler_event *p = profiler_event_decode(parent_tok);
		if (p && p->type == NB_PROF_COLL)
			profiler_coll_release(p, now);
	}
	return NB_NCCL_SUCCESS;
}

/* A kernel phase of one channel ended: the collective keeps the slowest channel's duration
 * of each phase (profiler ctx phase_ns). KernelPhase > KernelCh > Coll, all ours and live:
 * NCCL fires a channel's phases before that channel's KernelCh stop. */
static void phase_note(const struct profiler_event *e, uint64_t dur)
{
	if (e->phase < 0 || e->phase > 2)
		return;
	struct profiler_event *kch = profiler_event_decode(e->parent_tok);
	if (!kch || kch->type != NB_PROF_KERNEL_CH)
		return;
	struct profiler_event *coll = profiler_event_decode(kch->parent_tok);
	if (!coll || coll->type != NB_PROF_COLL)
		return;
	_Atomic uint64_t *m = &coll->phase_max[e->phase];
	uint64_t cur = atomic_load_explicit(m, memory_order_relaxed);
	while (dur > cur && !atomic_compare_exchange_weak_explicit(m, &cur, dur, memory_order_relaxed,
								    memory_order_relaxed))
		;
}

int profiler_record(void *handle, int state, const struct profiler_state_args *args)
{
	if (!handle) {
		atomic_fetch_add_explicit(&cnt_null, 1, memory_order_relaxed);
		return NB_NCCL_SUCCESS;
	}
	uint64_t tok = (uint64_t)(uintptr_t)handle;
	if (tok == PROFILER_API_MARK)
		return NB_NCCL_SUCCESS;
	struct profiler_event *e = profiler_event_decode(tok);
	if (!e) {
		atomic_fetch_add_explicit(&cnt_stale, 1, memory_order_relaxed);
		return NB_NCCL_SUCCESS;
	}
	struct profiler_ctx *c = e->ctx;
	if (e->inner_handle && c && c->inner)
		chain_profiler_record(c->inner, e->inner_handle, state, args ? args->raw : NULL,
				      c->version);
	if (e->flags & PROFILER_EV_CARRIER)
		return NB_NCCL_SUCCESS;
	uint64_t gpu = 0;
	if (state == NB_PROF_ST_KERNEL_CH_STOP && e->type == NB_PROF_KERNEL_CH && c && args &&
	    args->has_args && args->gpu_ts) {
		gpu = args->gpu_ts;
		e->gpu_stop = gpu;
		struct profiler_event *p = profiler_event_decode(e->parent_tok);
		if (p && p->type == NB_PROF_COLL) {
			uint64_t cur = atomic_load_explicit(&p->gpu_stop_max, memory_order_relaxed);
			while (gpu > cur &&
			       !atomic_compare_exchange_weak_explicit(&p->gpu_stop_max, &cur, gpu,
								      memory_order_relaxed,
								      memory_order_relaxed))
				;
		}
	}
	if (state == NB_PROF_ST_KERNEL_PHASE_STOP && e->type == NB_PROF_KERNEL_PHASE && c && args &&
	    args->has_args && args->gpu_ts > e->gpu_start && e->gpu_start) {
		gpu = args->gpu_ts;
		e->gpu_stop = gpu;
		phase_note(e, gpu - e->gpu_start);
	}
	if ((c && c->trace) || (!c && trace_writer_enabled()))
		trace_writer_line("{\"ev\":\"state\",\"t\":%llu,\"id\":\"0x%llx\",\"state\":%d,"
				  "\"gpu\":%llu,\"size\":%llu,\"n\":%d}",
				  (unsigned long long)profiler_now_ns(), (unsigned long long)tok,
				  state, (unsigned long long)profiler_gpu_to_host(c, gpu),
				  (unsigned long long)(args ? args->trans_size : 0),
				  args ? args->appended_ops : 0);
	return NB_NCCL_SUCCESS;
}

int profiler_finalize(void *context)
{
	struct profiler_ctx *c = profiler_ctx_decode((uint64_t)(uintptr_t)context);
	if (!c)
		return NB_NCCL_SUCCESS;
	pthread_mutex_lock(&ctx_lock);
	uint32_t g = atomic_load(&c->gen);
	bool was_live = g & 1;
	if (g & 1) {
		profiler_sample_release(c);
		atomic_store_explicit(&c->gen, (g + 1) & PROFILER_GEN_MASK, memory_order_release);
		uint32_t swept = profiler_pool_sweep(&c->pool);
		if (swept)
			runtime_log(NB_LOG_INFO, NB_LOG_PROFILE,
				    "profiler: comm 0x%llx finalized with %u events still open",
				    (unsigned long long)c->comm_id, swept);
		ctx_free[ctx_free_cnt++] = c->index;
	}
	const struct chain_profiler *inner = c->inner;
	void *ictx = c->inner_ctx;
	struct metrics_comm *metrics = c->metrics;
	c->inner = NULL;
	c->inner_ctx = NULL;
	c->metrics = NULL;
	pthread_mutex_unlock(&ctx_lock);
	metrics_comm_close(metrics); /* writes the file with this communicator's final numbers */
	if (was_live)
		otlp_comm_close(c->comm_id); /* the last one flushes the exporter (bounded) */
	if (inner)
		chain_profiler_finalize(inner, ictx);
	agree_comm_profiler_close(c->comm_id);
	if (c->trace)
		trace_writer_flush_all();
	if (was_live)
		runtime_control_release();
	return NB_NCCL_SUCCESS;
}

void profiler_get_counters(struct profiler_counters *o)
{
	memset(o, 0, sizeof(*o));
	o->dropped_pool = atomic_load(&cnt_dropped_pool);
	o->dropped_ctx = atomic_load(&cnt_dropped_ctx);
	o->detached = atomic_load(&cnt_detached);
	o->stale_handles = atomic_load(&cnt_stale);
	o->null_handles = atomic_load(&cnt_null);
	o->completed = atomic_load(&profiler_cnt_completed);
	o->program_faults = atomic_load(&profiler_cnt_faults);
}

struct profiler_ctx *profiler_ctx_find(uint64_t comm_id)
{
	for (uint32_t i = 1; i < PROFILER_MAX_POOLS; i++) {
		struct profiler_ctx *c = atomic_load_explicit(&ctx_table[i], memory_order_acquire);
		if (!c)
			break;
		if ((atomic_load(&c->gen) & 1) && c->comm_id == comm_id)
			return c;
	}
	return NULL;
}

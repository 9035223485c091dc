/* KernelCh sampling and the mask in force per call (profiler.h, "KernelCh sampling").
 *
 * Why: with KernelCh in NCCL's event mask every collective makes its kernel write GPU
 * timestamps per channel and gives NCCL's proxy (2.31: profiler) thread one op per channel
 * to poll; that, not ncclbpf's callbacks, is the ~1-2 us per small collective measured on
 * H200 (docs/results.md 1.5: Coll-only costs nothing). One instrumented collective in N
 * keeps GPU-accurate latency per size band at 1/N of that cost.
 *
 * How: NCCL copies its process-wide mask int into each task at the API call
 * (ncclProfilerStartGroupApiEvent). At each Coll start (same thread, at group end) the
 * sampler decides whether the *next* call should carry KernelCh and flips that bit. It
 * predicts the next call's size band from the band sequence seen so far (training loops
 * repeat their collectives), so the 1-in-N is per (communicator, band). Several contexts
 * share NCCL's one int: the bit is set while any context holds a request, so no context
 * can starve another by clearing it.
 *
 * Everything here runs on the application thread of the context's communicator (NCCL
 * serializes a communicator's enqueue), except the process-wide request count (atomic). */
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"
#include "plugin/profiler/profiler.h"
#include "runtime/runtime.h"

static _Atomic int kch_requests;

/* The mask NCCL loaded at this thread's last outermost GroupApi start, valid until its stop.
 * NCCL's ncclProfilerApiState is per thread too. */
/* initial-exec: no __tls_get_addr (the library may depend on libc/libpthread/libdl only) */
static __thread uint32_t tls_api_mask __attribute__((tls_model("initial-exec")));
static __thread bool tls_api_valid __attribute__((tls_model("initial-exec")));
/* when the application called NCCL for the calls of the current group (0: none) */
static __thread uint64_t tls_api_ns __attribute__((tls_model("initial-exec")));

int profiler_sample_requests(void)
{
	return atomic_load(&kch_requests);
}

int profiler_sample_parse(const char *s)
{
	if (!s || !*s || !strcmp(s, "auto"))
		return 0;
	char *end = NULL;
	unsigned long v = strtoul(s, &end, 10);
	if (!end || *end || v < 1 || v > 1000000)
		return -1;
	return (int)v;
}

static uint32_t load_mask(const int *p)
{
	return (uint32_t)__atomic_load_n(p, __ATOMIC_RELAXED);
}

void profiler_api_group_start(const struct profiler_ctx *c, uint64_t now)
{
	tls_api_ns = now;
	if (!c->sampler.nccl_mask)
		return;
	tls_api_mask = load_mask(c->sampler.nccl_mask);
	tls_api_valid = true;
}

void profiler_api_group_stop(void)
{
	tls_api_valid = false;
	tls_api_ns = 0;
}

uint64_t profiler_api_ns(void)
{
	return tls_api_ns;
}

uint32_t profiler_task_mask(const struct profiler_ctx *c)
{
	if (tls_api_valid)
		return tls_api_mask;
	/* no API events (profiler v1-v4) or a launch on another thread: the value now is the
	 * value at the call unless someone changed it in between (never us: we write only
	 * here, after the call) */
	if (c->sampler.nccl_mask)
		return load_mask(c->sampler.nccl_mask);
	return c->mask;
}

static void set_kch_bit(int *p, bool on)
{
	int cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	int want = on ? (cur | (int)NB_PROF_KERNEL_CH) : (cur & ~(int)NB_PROF_KERNEL_CH);
	if (want != cur)
		__atomic_store_n(p, want, __ATOMIC_RELAXED);
}

_Static_assert(PROFILER_BANDS == RUNTIME_SAMPLE_CTL_ENTRIES, "ncclbpf_sample_ctl has a slot per band");

void profiler_sample_init(struct profiler_ctx *c, int *nccl_mask, bool enable)
{
	struct profiler_sampler *s = &c->sampler;
	s->nccl_mask = nccl_mask;
	s->on = enable && nccl_mask;
	s->requesting = false;
	s->prev_band = 0xff;
	const char *env = getenv("NCCLBPF_PROFILE_SAMPLE");
	int fixed = profiler_sample_parse(env);
	if (fixed < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
			    "NCCLBPF_PROFILE_SAMPLE=%s not understood (auto or N >= 1): using auto", env);
		fixed = 0;
	}
	/* SEC("profiler") programs were written for a GPU time on every collective (the
	 * bandit's reward, for one): unless the user asked for sampling explicitly, they get
	 * it. The latency map and the metrics are fine with samples. The policies must be
	 * loaded to be seen (NCCLBPF_PROFILE=coll skips the mode detection that loads them). */
	runtime_load_policies_from_env();
	const struct nb_hook_chain *progs = runtime_chain_enter(NB_HOOK_PROFILER);
	if (!(env && *env) && progs && progs->len > 0)
		fixed = 1;
	runtime_chain_exit();
	s->fixed_n = fixed > 0 ? (uint32_t)fixed : 0;
	s->n = s->fixed_n ? s->fixed_n : 1;
	const char *d = getenv("NCCLBPF_PROFILE_SAMPLE_DELAY_MS");
	long ms = d && *d ? strtol(d, NULL, 10) : 1000;
	s->delay_ns = (uint64_t)(ms > 0 ? ms : 1000) * 1000000ull;
	s->last_coll_ns = 0;
	s->ewma_dt_ns = 0;
	memset(s->next_band, 0xff, sizeof(s->next_band));
	memset(s->since, 0, sizeof(s->since));
	memset(s->last_sample_ns, 0, sizeof(s->last_sample_ns));
	memset(s->seen, 0, sizeof(s->seen));
	atomic_store(&s->total, 0);
	atomic_store(&s->instrumented, 0);
	/* Policies steer sampling per band through this pinned map (a program that needs every
	 * collective while it explores and a few bursts afterwards). It lives until exit. */
	s->ctl = NULL;
	if (s->on) {
		char err[256] = "";
		s->ctl = runtime_pinned_map(runtime_builtin_pinned("ncclbpf_sample_ctl"), err,
					    sizeof(err));
		if (!s->ctl)
			runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
				    "profiler: cannot create the ncclbpf_sample_ctl map: %s", err);
	}
	/* every collective and no policy that could ask otherwise: nothing to sample */
	if (s->on && s->fixed_n == 1 && !s->ctl)
		s->on = false;
	/* every collective unless a policy steers a band: request from the start, so the first
	 * call is instrumented as it would be with a whole-life request */
	if (s->on && s->fixed_n == 1 && nccl_mask) {
		s->requesting = true;
		atomic_fetch_add(&kch_requests, 1);
		set_kch_bit(nccl_mask, true);
	}
	/* A context that wants KernelCh on every collective (full mode, v3/v4, N = 1) holds a
	 * request for its whole life, so that a sampling context of the same process never
	 * clears the bit under it. */
	if (!s->on && nccl_mask && ((c->mask | (uint32_t)c->inner_mask) & NB_PROF_KERNEL_CH)) {
		s->requesting = true;
		atomic_fetch_add(&kch_requests, 1);
		set_kch_bit(nccl_mask, true);
	}
}

void profiler_sample_release(struct profiler_ctx *c)
{
	struct profiler_sampler *s = &c->sampler;
	if (s->requesting) {
		s->requesting = false;
		if (atomic_fetch_sub(&kch_requests, 1) == 1 && s->nccl_mask)
			set_kch_bit(s->nccl_mask, false);
	}
	s->on = false;
}

/* Is the next collective of band b due for KernelCh? `since` counts the band's collectives
 * after its last sample, so the next one is the (since + 1)-th: 1 in N means since + 1 >= N
 * (N = 1: every collective). */
static bool band_due(const struct profiler_sampler *s, uint32_t b, uint64_t now, uint32_t mult)
{
	if (b >= PROFILER_BANDS)
		return false;
	if (s->last_sample_ns[b] == 0)
		return true; /* never GPU-timed: the first collective of a band is always wanted */
	if (s->since[b] + 1 >= s->n * mult)
		return true;
	return s->since[b] > 0 && now - s->last_sample_ns[b] >= s->delay_ns * mult;
}

bool profiler_sample_steered_due(uint32_t v, uint32_t index)
{
	uint32_t n = v & 0xffffu, burst = v >> 16;
	if (n == 0)
		n = 1;
	if (burst == 0)
		burst = 1;
	return index % n < burst;
}

/* The policy's request for band b, 0 if none. Array values are stable storage; a program
 * may write one concurrently (a torn read cannot happen for an aligned u32). */
static uint32_t ctl_of(const struct profiler_sampler *s, uint32_t b)
{
	if (!s->ctl || b >= PROFILER_BANDS)
		return 0;
	uint32_t *v = map_lookup(s->ctl, &b);
	return v ? __atomic_load_n(v, __ATOMIC_RELAXED) : 0;
}

void profiler_sample_coll(struct profiler_ctx *c, uint32_t band, bool instrumented,
			  uint64_t now)
{
	struct profiler_sampler *s = &c->sampler;
	atomic_fetch_add_explicit(&s->total, 1, memory_order_relaxed);
	if (instrumented)
		atomic_fetch_add_explicit(&s->instrumented, 1, memory_order_relaxed);
	if (!s->on || band >= PROFILER_BANDS)
		return;
	/* the collective rate: N grows with it so instrumented collectives stay
	 * PROFILER_SAMPLE_SPACING_NS apart on average */
	if (s->last_coll_ns && now > s->last_coll_ns) {
		uint64_t dt = now - s->last_coll_ns;
		s->ewma_dt_ns = s->ewma_dt_ns ? s->ewma_dt_ns - s->ewma_dt_ns / 16 + dt / 16 : dt;
	}
	s->last_coll_ns = now;
	if (!s->fixed_n) {
		uint64_t dt = s->ewma_dt_ns ? s->ewma_dt_ns : PROFILER_SAMPLE_SPACING_NS;
		uint64_t n = (PROFILER_SAMPLE_SPACING_NS + dt - 1) / dt;
		s->n = n < 1 ? 1 : n > PROFILER_SAMPLE_MAX_N ? PROFILER_SAMPLE_MAX_N : (uint32_t)n;
	}
	if (instrumented) {
		s->since[band] = 0;
		s->last_sample_ns[band] = now;
	} else if (s->since[band] < UINT32_MAX) {
		s->since[band]++;
	}
	s->seen[band]++;
	if (s->prev_band < PROFILER_BANDS)
		s->next_band[s->prev_band] = (uint8_t)band;
	s->prev_band = (uint8_t)band;
	uint32_t pred = s->next_band[band] != 0xff ? s->next_band[band] : band;
	/* the predicted next band is due, or this band is long overdue (prediction failing) */
	/* a band a policy steers follows its request, not the default rules */
	uint32_t v_cur = ctl_of(s, band);
	uint32_t v_pred = pred == band ? v_cur : ctl_of(s, pred);
	bool want = (v_pred && pred < PROFILER_BANDS ? profiler_sample_steered_due(v_pred, s->seen[pred])
						      : band_due(s, pred, now, 1)) ||
		    (!v_cur && band_due(s, band, now, 4));
	/* ... and the collective after one (where the sampled one's hold on the stream ends:
	 * the next kernel's start) */
	want = want || (instrumented && v_cur && profiler_sample_steered_due(v_cur, s->seen[band] - 1));
	/* a steered band's sample also needs the collective before it (its completion is where
	 * the sampled one's period starts): instrument the next call when the one after it
	 * (the predicted successor of pred) is a steered sample */
	if (!want) {
		uint32_t pred2 = pred < PROFILER_BANDS && s->next_band[pred] != 0xff ? s->next_band[pred] : pred;
		uint32_t v2 = pred2 == pred ? v_pred : ctl_of(s, pred2);
		if (v2 && pred2 < PROFILER_BANDS)
			want = profiler_sample_steered_due(v2, s->seen[pred2] + (pred2 == pred));
	}
	if (want != s->requesting) {
		s->requesting = want;
		if (want)
			atomic_fetch_add(&kch_requests, 1);
		else
			atomic_fetch_sub(&kch_requests, 1);
	}
	set_kch_bit(s->nccl_mask, atomic_load_explicit(&kch_requests, memory_order_relaxed) > 0);
}

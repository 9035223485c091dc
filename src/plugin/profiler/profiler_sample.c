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
 * Rank-aligned: every rank of a communicator runs the same collectives in the same order,
 * so a choice made from the band sequence and each band's own collective index picks the
 * same collectives on every rank, and their spans join in one trace (OTLP: trace id from
 * commHash and sequence). Only N and the bounded delay come from this rank's clock; N is a
 * power of two (a rank one step off samples a subset or superset of the others') with
 * hysteresis, and both rules act on a grid of band indices (multiples of N, of
 * min(N, PROFILER_SAMPLE_DELAY_GRID)), never on "now".
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

/* bits: KernelCh, and KernelPhase for a sampling context that asked for phases (NCCL turns
 * KernelCh on for a KernelPhase bit: left set, it would instrument every collective) */
static void set_kch_bit(int *p, bool on, uint32_t bits)
{
	int cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	int want = on ? (cur | (int)bits) : (cur & ~(int)bits);
	if (want != cur)
		__atomic_store_n(p, want, __ATOMIC_RELAXED);
}

_Static_assert(PROFILER_BANDS == RUNTIME_SAMPLE_CTL_ENTRIES, "ncclbpf_sample_ctl has a slot per band");

void profiler_sample_init(struct profiler_ctx *c, int *nccl_mask, bool enable)
{
	struct profiler_sampler *s = &c->sampler;
	s->nccl_mask = nccl_mask;
	s->on = enable && nccl_mask;
	s->bits = NB_PROF_KERNEL_CH | (s->on ? c->mask & NB_PROF_KERNEL_PHASE : 0);
	s->requesting = false;
	s->prev_band = 0xff;
	s->prev_run = 0;
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
		set_kch_bit(nccl_mask, true, s->bits);
	}
	/* A context that wants KernelCh on every collective (full mode, v3/v4, N = 1) holds a
	 * request for its whole life, so that a sampling context of the same process never
	 * clears the bit under it. */
	if (!s->on && nccl_mask && ((c->mask | (uint32_t)c->inner_mask) & NB_PROF_KERNEL_CH)) {
		s->requesting = true;
		atomic_fetch_add(&kch_requests, 1);
		set_kch_bit(nccl_mask, true, s->bits);
	}
}

void profiler_sample_release(struct profiler_ctx *c)
{
	struct profiler_sampler *s = &c->sampler;
	if (s->requesting) {
		s->requesting = false;
		if (atomic_fetch_sub(&kch_requests, 1) == 1 && s->nccl_mask)
			set_kch_bit(s->nccl_mask, false, s->bits);
	}
	s->on = false;
}

/* Is the next collective of band b due for KernelCh? Its index in the band is seen[b]
 * (rank-invariant): 1 in N means the multiples of N (N = 1: every collective). `since`
 * counts the band's collectives after its last sample: a band the prediction keeps
 * missing is forced after mult * N; one not sampled for mult * delay is sampled at the
 * next point of the delay grid. */
static bool band_due(const struct profiler_sampler *s, uint32_t b, uint64_t now, uint32_t mult)
{
	if (b >= PROFILER_BANDS)
		return false;
	if (s->last_sample_ns[b] == 0)
		return true; /* never GPU-timed: the first collective of a band is always wanted */
	uint32_t k = s->seen[b];
	if (mult == 1 && k % s->n == 0)
		return true;
	if (mult > 1 && s->since[b] + 1 >= s->n * mult)
		return true;
	uint32_t grid = s->n < PROFILER_SAMPLE_DELAY_GRID ? s->n : PROFILER_SAMPLE_DELAY_GRID;
	return s->since[b] > 0 && now - s->last_sample_ns[b] >= s->delay_ns * mult && k % grid == 0;
}

/* The adaptive N: a power of two near r = PROFILER_SAMPLE_SPACING_NS / dt, changed only
 * when r has clearly left the current N's range (above 1.5 N or below 0.4 N), so ranks
 * whose rates hover around a boundary keep the same N. */
static uint32_t adaptive_n(uint32_t cur, uint64_t dt)
{
	const uint64_t sp = PROFILER_SAMPLE_SPACING_NS;
	if (dt == 0)
		dt = 1;
	if (sp * 2 <= (uint64_t)cur * 3 * dt && sp * 5 >= (uint64_t)cur * 2 * dt)
		return cur;
	uint64_t raw = (sp + dt - 1) / dt;
	uint32_t n = 1;
	while (n < raw && n < PROFILER_SAMPLE_MAX_N)
		n <<= 1;
	return n;
}

/* The predicted band of the collective after one of band b that ended a run of `run`
 * collectives of b (the current one included); b itself when nothing is known. */
static uint32_t predict_next(const struct profiler_sampler *s, uint32_t b, uint32_t run)
{
	if (b >= PROFILER_BANDS)
		return b;
	uint32_t r = run == 0 ? 0 : (run > PROFILER_SAMPLE_RUNS ? PROFILER_SAMPLE_RUNS : run) - 1;
	return s->next_band[b][r] != 0xff ? s->next_band[b][r] : b;
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
	if (!s->fixed_n)
		s->n = adaptive_n(s->n, s->ewma_dt_ns ? s->ewma_dt_ns : PROFILER_SAMPLE_SPACING_NS);
	if (instrumented) {
		s->since[band] = 0;
		s->last_sample_ns[band] = now;
	} else if (s->since[band] < UINT32_MAX) {
		s->since[band]++;
	}
	s->seen[band]++;
	if (s->prev_band < PROFILER_BANDS && s->prev_run > 0) {
		uint32_t r = (s->prev_run > PROFILER_SAMPLE_RUNS ? PROFILER_SAMPLE_RUNS : s->prev_run) - 1;
		s->next_band[s->prev_band][r] = (uint8_t)band;
	}
	uint32_t run = s->prev_band == band && s->prev_run < 255 ? s->prev_run + 1u : 1u;
	s->prev_band = (uint8_t)band;
	s->prev_run = (uint8_t)run;
	uint32_t pred = predict_next(s, band, run);
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
		uint32_t pred2 = predict_next(s, pred, pred == band ? run + 1 : 1);
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
	set_kch_bit(s->nccl_mask, atomic_load_explicit(&kch_requests, memory_order_relaxed) > 0,
		    s->bits);
}

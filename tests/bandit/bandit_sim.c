/* Emulated ranks running a learning policy over the step model: see bandit_sim.h. */
#include "bandit_sim.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ncclbpf/ncclbpf.h>
#include <ncclbpf/policy.h>

#include "maps/map.h"
#include "maps/map_internal.h"
#include "plugin/profiler/profiler.h"
#include "runtime/runtime.h"
#include "sample_model.h"

#define HIST 4096 /* decisions remembered per band (band_seq order) */
static signed char hist[SM_MAX_BANDS][HIST];

int bsim_open(struct bsim *s, const char *obj_path, const char *tuner_prog, const char *prof_prog,
	      struct sm_model *m)
{
	int nr = m->n_ranks;
	memset(s, 0, sizeof(*s));
	memset(hist, -1, sizeof(hist));
	s->nr = nr;
	s->m = m;
	s->late_from_step = 1 << 30;
	s->fifo = calloc((BSIM_MAX_LAG + 2) * SM_MAX_CALLS, sizeof(*s->fifo));
	s->fifo_timed = calloc((BSIM_MAX_LAG + 2) * SM_MAX_CALLS, sizeof(*s->fifo_timed));
	if (!s->fifo || !s->fifo_timed) {
		snprintf(s->err, sizeof(s->err), "out of memory");
		return -1;
	}
	for (int r = 0; r < nr; r++) {
		struct bsim_rank *k = &s->r[r];
		if (ncclbpf_object_open_file(obj_path, &k->obj, s->err, sizeof(s->err)) || !k->obj)
			return -1;
		k->tuner = ncclbpf_object_find_program(k->obj, tuner_prog);
		k->prof = ncclbpf_object_find_program(k->obj, prof_prog);
		struct ncclbpf_prepare_opts o = {.sz = sizeof(o), .verify_mode = NCCLBPF_VERIFY_STRICT};
		if (!k->tuner || !k->prof ||
		    ncclbpf_program_prepare(k->tuner, NCCLBPF_HOOK_TUNER, &o, s->err, sizeof(s->err)) ||
		    ncclbpf_program_prepare(k->prof, NCCLBPF_HOOK_PROFILER, &o, s->err, sizeof(s->err)))
			return -1;
		k->sample_ctl = ncclbpf_object_find_map(k->obj, "ncclbpf_sample_ctl");
		k->timed_next = 1;
		int a = 0;
		for (size_t i = 0; i < ncclbpf_object_map_count(k->obj); i++) {
			struct nb_map *mp = ncclbpf_object_map(k->obj, i)->map;
			int slot = map_agreed_slot(mp);
			if (slot < 0)
				continue;
			if (a >= BSIM_MAX_AGREED) {
				snprintf(s->err, sizeof(s->err), "more than %d agreed maps", BSIM_MAX_AGREED);
				return -1;
			}
			struct bsim_agreed *g = &s->ag[a];
			if (r == 0) {
				g->op = NCCLBPF_AGREE_OP_OF(mp->map_flags);
				g->epoch = NCCLBPF_AGREE_EPOCH_OF(mp->map_flags);
				g->stride = map_array_stride(mp);
				g->bytes = g->stride * mp->max_entries;
				g->pending = calloc(1, g->bytes);
				g->pub = calloc(1, g->bytes);
			}
			g->slot[r] = slot;
			k->contrib[a] = calloc(1, g->bytes);
			a++;
		}
		s->n_ag = a;
	}
	return 0;
}

void bsim_close(struct bsim *s)
{
	for (int r = 0; r < s->nr; r++) {
		ncclbpf_object_close(s->r[r].obj);
		for (int a = 0; a < s->n_ag; a++)
			free(s->r[r].contrib[a]);
	}
	for (int a = 0; a < s->n_ag; a++) {
		free(s->ag[a].pending);
		free(s->ag[a].pub);
	}
	memset(s->r, 0, sizeof(s->r));
	s->n_ag = 0;
	free(s->fifo);
	free(s->fifo_timed);
	s->fifo = NULL;
	s->fifo_timed = NULL;
	s->fifo_n = 0;
}

/* Word-wise reduction over the ranks that contributed an entry (non-zero bytes). */
static void reduce(struct bsim *s, int a)
{
	struct bsim_agreed *g = &s->ag[a];
	for (size_t e = 0; e < g->bytes; e += g->stride) {
		int contrib[SM_MAX_RANKS], nc = 0;
		for (int r = 0; r < s->nr; r++) {
			const uint8_t *c = s->r[r].contrib[a] + e;
			int any = 0;
			for (size_t i = 0; i < g->stride; i++)
				any |= c[i];
			if (any)
				contrib[nc++] = r;
		}
		for (size_t w = 0; w + 8 <= g->stride; w += 8) {
			uint64_t acc = 0;
			for (int i = 0; i < nc; i++) {
				uint64_t v;
				memcpy(&v, s->r[contrib[i]].contrib[a] + e + w, 8);
				switch (g->op) {
				case NCCLBPF_AGREE_MIN: acc = i == 0 || v < acc ? v : acc; break;
				case NCCLBPF_AGREE_MAX: acc = i == 0 || v > acc ? v : acc; break;
				case NCCLBPF_AGREE_LEADER: acc = contrib[i] == 0 ? v : acc; break;
				default: acc += v; break; /* SUM, MEAN */
				}
			}
			if (g->op == NCCLBPF_AGREE_MEAN && nc)
				acc /= (uint64_t)nc;
			memcpy(g->pending + e + w, &acc, 8);
		}
	}
}

/* The tuner reaches comm_seq c: a version becomes active, the next one is snapshotted. */
static void agree_at(struct bsim *s, uint64_t c)
{
	for (int a = 0; a < s->n_ag; a++) {
		struct bsim_agreed *g = &s->ag[a];
		if (!g->epoch || c == 0 || c % g->epoch)
			continue;
		if (g->have_pending)
			memcpy(g->pub, g->pending, g->bytes);
		reduce(s, a);
		g->have_pending = 1;
	}
}

static void bind(struct bsim *s, int r, int write)
{
	static struct nb_map_binding b;
	memset(&b, 0, sizeof(b));
	b.mode = write ? NB_BIND_WRITE : NB_BIND_READ;
	for (int a = 0; a < s->n_ag; a++)
		b.base[s->ag[a].slot[r]] = write ? s->r[r].contrib[a] : s->ag[a].pub;
	map_agreed_bind(&b);
}

static uint32_t ctl_value(struct bsim_rank *k, uint32_t band)
{
	uint32_t v = 0;
	if (!k->sample_ctl || band >= 65 || ncclbpf_map_lookup(k->sample_ctl, &band, &v) != 0)
		v = 0;
	return v;
}

/* The profiler's KernelCh sampler at the call of collective c on rank r: whether it is
 * instrumented, and the decision for the next call (profiler_sample_coll: the policy's
 * request for the next band, or for the one after, whose predecessor is the next). */
static int sample_at_call(struct bsim *s, int r, const struct sm_coll *c)
{
	struct bsim_rank *k = &s->r[r];
	const struct sm_workload *w = &s->m->w;
	int timed = s->untimed_every_other ? (int)(c->comm_seq % 2 == 0) : k->timed_next;
	uint32_t b = ncclbpf_size_bucket(c->bytes);
	k->seen_band[b]++;
	uint32_t b1 = ncclbpf_size_bucket(w->calls[(c->idx + 1) % w->n_calls].bytes);
	uint32_t b2 = ncclbpf_size_bucket(w->calls[(c->idx + 2) % w->n_calls].bytes);
	k->timed_next = sample_model_next(ctl_value(k, b), k->seen_band[b], timed, b1, ctl_value(k, b1),
					  k->seen_band[b1], b2, ctl_value(k, b2), k->seen_band[b2]);
	return timed;
}

/* The host's lead in steps when it calls step j, with a lead that builds up by r = ramp %
 * of a step per GPU step: at GPU step k the host is at j = k (1 + r), so its lead is
 * j r / (1 + r), until profiler_lag_steps (fractional: its calls' times must increase). */
static double bsim_lead_at(const struct bsim *s, int j)
{
	double r = s->profiler_lag_ramp_pct / 100.0;
	double lead = j * r / (1 + r);
	return lead < s->profiler_lag_steps ? lead : s->profiler_lag_steps;
}

static void complete(struct bsim *s, const struct sm_coll *c, const int *timed)
{
	if (s->no_profiler)
		return;
	for (int r = 0; r < s->nr; r++) {
		struct ncclbpf_profiler_ctx pc;
		memset(&pc, 0, sizeof(pc));
		pc.comm_id = 0x1234;
		pc.seq = c->seq;
		pc.n_bytes = c->bytes;
		pc.start_ns = c->enq_ns[r];
		pc.api_ns = s->no_api_events ? 0 : c->api_ns[r];
		/* a host that far ahead called it that many steps earlier (the model's host is
		 * one step ahead at most; the tuner's decisions and the timestamps the reward
		 * uses are the model's) */
		if (s->profiler_lag_steps > 0 && pc.api_ns) {
			/* one step's time, fixed at the first completion: the host's lead does not
			 * jitter (a noisy step time times a lead of 130 steps would reorder calls) */
			if (!s->lead_step_us)
				s->lead_step_us = s->m->last_step_us;
			if (s->profiler_lag_ramp_pct > 0) /* the host's lead when it called this one */
				s->api_shift_ns = (uint64_t)(bsim_lead_at(s, c->step) * s->lead_step_us * 1e3);
			else if (!s->api_shift_ns) /* constant */
				s->api_shift_ns = (uint64_t)(s->profiler_lag_steps * s->lead_step_us * 1e3);
			pc.api_ns -= s->api_shift_ns;
		}
		if (timed[r]) {
			pc.host_ns = c->notice_ns[r] - c->enq_ns[r];
			pc.gpu_ns = c->end_ns[r] - c->kstart_ns[r];
			pc.flags = NCCLBPF_PROF_F_GPU_TIMED;
			pc.gpu_start_ns = c->kstart_ns[r];
			pc.gpu_end_ns = c->end_ns[r];
		} else {
			pc.host_ns = 3000; /* the enqueue, not a latency */
		}
		pc.coll_type = (uint32_t)c->coll;
		pc.algo = c->pair / NCCLBPF_NUM_PROTOS;
		pc.proto = c->pair % NCCLBPF_NUM_PROTOS;
		pc.n_channels = 2;
		pc.rank = (uint32_t)r;
		pc.n_ranks = pc.n_nodes = (uint32_t)s->nr;
		pc.size_bucket = ncclbpf_size_bucket(c->bytes);
		pc.comm_seq = c->comm_seq;
		pc.band_seq = c->band_seq;
		bind(s, r, 1);
		uint64_t ret = 0;
		char err[256];
		if (ncclbpf_program_run(s->r[r].prof, &pc, sizeof(pc), &ret, err, sizeof(err)) != 0)
			fprintf(stderr, "bsim: profiler program failed: %s\n", err);
		map_agreed_bind(NULL);
	}
}

static void drain(struct bsim *s, int upto_step)
{
	int keep = 0;
	for (int i = 0; i < s->fifo_n; i++) {
		if (s->fifo[i].step <= upto_step) {
			complete(s, &s->fifo[i], s->fifo_timed[i]);
		} else {
			s->fifo[keep] = s->fifo[i];
			memcpy(s->fifo_timed[keep], s->fifo_timed[i], sizeof(s->fifo_timed[i]));
			keep++;
		}
	}
	s->fifo_n = keep;
}

void bsim_run(struct bsim *s, int steps)
{
	struct sm_model *m = s->m;
	int target = m->steps_done + steps;
	while (m->steps_done < target) {
		struct sm_coll c;
		sm_next(m, &c);
		agree_at(s, c.comm_seq);
		const struct sm_band *b = c.band >= 0 ? &m->bands[c.band] : NULL;
		int pair = -1, kept = 1, first = -2;
		for (int r = 0; r < s->nr; r++) {
			struct ncclbpf_tuner_ctx t;
			memset(&t, 0, sizeof(t));
			t.comm_id = 0x1234;
			t.n_bytes = c.bytes;
			t.seq = c.seq;
			t.coll_type = (uint32_t)c.coll;
			t.n_ranks = t.n_nodes = (uint32_t)s->nr;
			t.num_pipe_ops = 1;
			t.abi_version = 5;
			t.comm_seq = c.comm_seq;
			t.band_seq = c.band_seq;
			t.algo = NCCLBPF_ALGO_KEEP;
			t.proto = NCCLBPF_PROTO_KEEP;
			for (int i = 0; i < SM_NPAIR; i++) {
				int ok = b && b->mean_us[i] > 0;
				((float *)t.cost)[i] = ok ? b->cost[i] : -1.0f;
				t.avail_mask |= (uint32_t)ok << i;
			}
			bind(s, r, 0);
			uint64_t ret = 0;
			char err[256];
			if (ncclbpf_program_run(s->r[r].tuner, &t, sizeof(t), &ret, err, sizeof(err)) != 0)
				fprintf(stderr, "bsim: tuner program failed: %s\n", err);
			map_agreed_bind(NULL);
			int d = (t.algo + 1) * 8 + (t.proto + 1);
			if (r == 0)
				first = d;
			else if (d != first)
				s->mismatches++;
			if (r == 0) {
				int p = b ? b->auto_pair : SM_RING_SIMPLE;
				if (t.algo >= 0 && t.proto >= 0) {
					int q = t.algo * NCCLBPF_NUM_PROTOS + t.proto;
					if (q < SM_NPAIR && b && b->mean_us[q] > 0) {
						p = q;
						kept = 0;
						s->forced++;
					} else {
						s->unavailable++;
					}
				}
				pair = p;
			}
		}
		if (getenv("BSIM_TRACE_BAND") && c.band == atoi(getenv("BSIM_TRACE_BAND")) &&
		    c.band_seq >= (uint64_t)atoi(getenv("BSIM_TRACE_FROM") ? getenv("BSIM_TRACE_FROM") : "0") &&
		    c.band_seq < 60 + (uint64_t)atoi(getenv("BSIM_TRACE_FROM") ? getenv("BSIM_TRACE_FROM") : "0") &&
		    s->n_ag >= 2) {
			uint32_t key = (uint32_t)(c.coll * 24 + ncclbpf_size_bucket(c.bytes) - 10);
			int si = s->ag[0].stride > s->ag[1].stride ? 0 : 1;
			const uint64_t *st = (const uint64_t *)(s->ag[si].pub + key * s->ag[si].stride);
			const uint64_t *cn = (const uint64_t *)(s->ag[1 - si].pub + key * s->ag[1 - si].stride);
			fprintf(stderr, "bs %llu step %d -> pair %d:", (unsigned long long)c.band_seq, c.step, pair);
			for (int a = 0; a < 8; a++)
				if (cn[a])
					fprintf(stderr, " a%d n%llu %.0f/%.0f sd%.0f", a, (unsigned long long)cn[a] - 1,
						st[a] / 1e3, cn[8 + a] / 1e3, st[8 + a] / 1e3);
			fprintf(stderr, " seen %llu base %llu\n", (unsigned long long)cn[16], (unsigned long long)st[16]);
		}
		int timed[SM_MAX_RANKS];
		for (int r = 0; r < s->nr; r++)
			timed[r] = sample_at_call(s, r, &c);
		s->timed += timed[0];
		s->untimed += !timed[0];
		if (c.step >= s->late_from_step) {
			s->late_timed += timed[0];
			s->late_n++;
		}
		int step = c.step;
		int done = sm_run(m, &c, pair, kept);
		if (getenv("BSIM_TRACE_TIMES") && c.step < 8)
			fprintf(stderr, "t step %d idx %d band %d pair %d t %.1f enq %.1f ks %.1f end %.1f\n", c.step,
				c.idx, c.band, pair, c.t_us, (c.enq_ns[0] - 1e9) / 1e3, (c.kstart_ns[0] - 1e9) / 1e3,
				(c.end_ns[0] - 1e9) / 1e3);
		if (c.band >= 0) {
			struct bsim_band_stats *bs = &s->band[c.band];
			if (bs->n && pair != bs->final_pair)
				bs->last_change = (int)c.band_seq;
			bs->final_pair = pair;
			bs->n++;
			if (c.band_seq < HIST)
				hist[c.band][c.band_seq] = (signed char)pair;
		}
		if (step < BSIM_MAX_STEPS)
			s->decision_pair[step][c.idx] = pair;
		s->fifo[s->fifo_n] = c;
		memcpy(s->fifo_timed[s->fifo_n], timed, sizeof(timed));
		s->fifo_n++;
		if (done) {
			if (step < BSIM_MAX_STEPS)
				s->step_us[step] = m->last_step_us;
			s->steps = step + 1;
			/* completions: this step's before the next is enqueued (sync), else the
			 * previous step's (the host runs one step ahead), profiler_lag_steps later */
			int lag = s->profiler_lag_steps < 0 ? 0
				  : s->profiler_lag_steps > BSIM_MAX_LAG ? BSIM_MAX_LAG : s->profiler_lag_steps;
			if (s->profiler_lag_ramp_pct > 0 && bsim_lead_at(s, step) < lag)
				lag = (int)bsim_lead_at(s, step);
			drain(s, (m->w.queued ? step - 1 : step) - lag);
		}
	}
	drain(s, 1 << 30);
	if (getenv("BSIM_DEBUG") && s->n_ag >= 2) {
		/* the published statistics of every modelled band (policies with the bandit's
		 * map layout: stat = mean[8], sd[8], ...; count = n[8], ...) */
		for (int i = 0; i < m->n_bands; i++) {
			uint32_t key = (uint32_t)(m->bands[i].coll * 24 + ncclbpf_size_bucket(m->bands[i].bytes) - 10);
			int si = s->ag[0].stride > s->ag[1].stride ? 0 : 1;
			const uint64_t *st = (const uint64_t *)(s->ag[si].pub + key * s->ag[si].stride);
			const uint64_t *cn = (const uint64_t *)(s->ag[1 - si].pub + key * s->ag[1 - si].stride);
			fprintf(stderr, "band %d (%llu B):", i, (unsigned long long)m->bands[i].bytes);
			for (int a = 0; a < 8; a++)
				if (cn[a])
					fprintf(stderr, " arm%d n=%llu max=%.1f min=%.1f sd=%.1f", a,
						(unsigned long long)cn[a] - 1, st[a] / 1e3, cn[8 + a] / 1e3,
						st[8 + a] / 1e3);
			fprintf(stderr, "\n");
			if (atoi(getenv("BSIM_DEBUG")) > 2) {
				/* the whole history, run-length: pair x count */
				fprintf(stderr, "  runs:");
				for (int q = 0, run = 1; q < HIST && q < (int)s->band[i].n; q++, run++)
					if (q + 1 == (int)s->band[i].n || q + 1 == HIST || hist[i][q + 1] != hist[i][q]) {
						fprintf(stderr, " %dx%d", hist[i][q], run);
						run = 0;
					}
				fprintf(stderr, "\n");
			} else if (atoi(getenv("BSIM_DEBUG")) > 1) {
				fprintf(stderr, "  decisions:");
				for (int q = 0; q < 80 && q < HIST; q++)
					fprintf(stderr, " %d", hist[i][q]);
				fprintf(stderr, "\n");
			}
		}
	}
	/* the last decision that was not the final pair, per band */
	for (int i = 0; i < m->n_bands; i++) {
		struct bsim_band_stats *bs = &s->band[i];
		bs->last_explore = 0;
		for (int q = 0; q < HIST && q < (int)bs->n; q++)
			if (hist[i][q] != bs->final_pair)
				bs->last_explore = q + 1;
	}
}

double bsim_sum_steps(const struct bsim *s, int from, int to)
{
	double sum = 0;
	for (int i = from; i < to && i < s->steps && i < BSIM_MAX_STEPS; i++)
		sum += s->step_us[i];
	return sum;
}

double bsim_mean_step(const struct bsim *s, int from, int to)
{
	int n = (to < s->steps ? to : s->steps) - from;
	return n > 0 ? bsim_sum_steps(s, from, to) / n : 0;
}

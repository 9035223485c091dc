/* The three-phase closed-loop scenario shared by the native and the end-to-end tests:
 * quiet network -> 10x contention spike -> quiet again, one AllReduce of 8 MiB per step.
 * A driver supplies decide() (the tuner side) and the scenario runs NCCL's selection, the
 * latency model and the profiler events, then checks the three phases. */
#ifndef NCCLBPF_TESTS_CLOSED_LOOP_H
#define NCCLBPF_TESTS_CLOSED_LOOP_H

#include <stdint.h>
#include <stdio.h>

#include "profiler_host.h"
#include "profiler_model.h"

#define CL_BYTES (8ull << 20)
#define CL_PHASE 150
#define CL_STEPS (3 * CL_PHASE)
#define CL_COMM_CHANNELS 16

struct cl_result {
	int ch[CL_STEPS];
	uint64_t lat[CL_STEPS];
};

/* Returns the channel count NCCL runs for this step (0 = NCCL's default), and the algo /
 * protocol it selected. */
typedef int (*cl_decide_fn)(void *arg, int step, int *algo, int *proto);

static inline double cl_contention(int step)
{
	return step >= CL_PHASE && step < 2 * CL_PHASE ? 10.0 : 1.0;
}

/* lag: completions come back `lag` collectives after the decision (0 = before the next
 * decision, like a training step that synchronizes; > 0 = the host runs ahead). */
static inline void cl_run_lag(struct ph_comm *pc, cl_decide_fn decide, void *arg,
			      struct cl_result *r, int lag)
{
	struct ph_coll q[8];
	if (lag > 7)
		lag = 7;
	for (int s = 0; s < CL_STEPS + lag; s++) {
		if (s < CL_STEPS) {
			int algo = 1, proto = 2;
			int ch = decide(arg, s, &algo, &proto);
			/* NCCL: 0 = its own count; otherwise clamped to the communicator's channels */
			if (ch <= 0 || ch > CL_COMM_CHANNELS)
				ch = CL_COMM_CHANNELS;
			uint64_t lat = pm_latency_ns(CL_BYTES, algo, proto, ch, cl_contention(s));
			struct ph_coll k = {.coll_type = 4, .count = CL_BYTES / 4, .algo = algo,
					    .proto = proto, .n_channels = ch, .gpu_ns = lat};
			q[s % 8] = k;
			ph_coll_app(pc, &q[s % 8]); /* enqueue */
			r->ch[s] = ch;
			r->lat[s] = lat;
		}
		if (s - lag >= 0 && s - lag < CL_STEPS)
			ph_coll_proxy(pc, &q[(s - lag) % 8]); /* completion, lag steps later */
	}
}

static inline void cl_run(struct ph_comm *pc, cl_decide_fn decide, void *arg, struct cl_result *r)
{
	cl_run_lag(pc, decide, arg, r, 0);
}

static inline double cl_mean_ch(const struct cl_result *r, int from, int to)
{
	double sum = 0;
	for (int s = from; s < to; s++)
		sum += r->ch[s];
	return sum / (to - from);
}

static inline int cl_max_ch(const struct cl_result *r, int from, int to)
{
	int m = 0;
	for (int s = from; s < to; s++)
		m = r->ch[s] > m ? r->ch[s] : m;
	return m;
}

static inline void cl_print(const char *who, const struct cl_result *r)
{
	printf("%s channels per 10 steps:", who);
	for (int s = 0; s < CL_STEPS; s += 10)
		printf("%s%d", s % CL_PHASE ? " " : " | ", r->ch[s]);
	printf("\n");
}

/* The three phases: returns the number of failed checks (and prints them). */
static inline int cl_check(const char *who, const struct cl_result *r)
{
	int bad = 0;
	double p1_end = cl_mean_ch(r, CL_PHASE - 30, CL_PHASE);
	double p2_end = cl_mean_ch(r, 2 * CL_PHASE - 30, 2 * CL_PHASE);
	double p3_end = cl_mean_ch(r, CL_STEPS - 30, CL_STEPS);
#define CL_EXPECT(c)                                                                          \
	do {                                                                                  \
		if (!(c)) {                                                                   \
			bad++;                                                                \
			fprintf(stderr, "%s: closed loop: %s failed (phase means %.1f %.1f %.1f)\n", \
				who, #c, p1_end, p2_end, p3_end);                             \
		}                                                                             \
	} while (0)
	/* ramp: starts conservative at 2 (after one calibration step), reaches >= 12 */
	CL_EXPECT(r->ch[1] == 2 || r->ch[2] == 2);
	CL_EXPECT(p1_end >= 12.0);
	/* spike: backs off well below where it was */
	CL_EXPECT(p2_end <= 6.0);
	CL_EXPECT(cl_max_ch(r, 2 * CL_PHASE - 30, 2 * CL_PHASE) <= 8);
	/* recovery: climbs back */
	CL_EXPECT(p3_end >= 12.0);
#undef CL_EXPECT
	return bad;
}

#endif

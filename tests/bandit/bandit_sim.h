/* Runs a learning policy (a tuner and a profiler program of one object, e.g. the bandit) on
 * R emulated ranks over the mock host's virtual-time step model (tests/mock_nccl/
 * step_model.h). Deterministic: no wall clock, no threads.
 *
 * Each rank has its own copy of the object, as a process would. Per collective: the tuner
 * of every rank decides (published view of the agreed maps bound), NCCL's selection gives
 * the pair, the model runs it; the profiler program of every rank runs when the collective
 * completes - after the next step was enqueued when the host runs ahead (queued), before
 * it otherwise - with the timestamps the model gives that rank, GPU-timed or not as the
 * profiler's KernelCh sampler would have decided at the call (profiler_sample.c, steered
 * by the policy's "ncclbpf_sample_ctl" requests).
 *
 * Agreement (docs/agreement.md) is emulated word by word: when the tuner reaches a multiple
 * of a map's epoch K, the contributions are reduced (over the ranks that contributed an
 * entry) into a version that becomes active K collectives later; the tuner at comm_seq s
 * reads version floor(s / K) - 1.
 */
#ifndef NCCLBPF_TESTS_BANDIT_SIM_H
#define NCCLBPF_TESTS_BANDIT_SIM_H

#include <stddef.h>
#include <stdint.h>

#include "step_model.h"

#define BSIM_MAX_STEPS 4000
#define BSIM_MAX_AGREED 4
#define BSIM_MAX_LAG 200 /* steps a profiler's completions may trail the host by */

struct ncclbpf_object;
struct ncclbpf_program;
struct ncclbpf_map;
struct nb_map;

struct bsim_rank {
	struct ncclbpf_object *obj;
	struct ncclbpf_program *tuner, *prof;
	struct ncclbpf_map *sample_ctl;
	uint8_t *contrib[BSIM_MAX_AGREED];
	uint32_t seen_band[65];
	int timed_next;
};

struct bsim_agreed {
	int slot[SM_MAX_RANKS];
	uint32_t op, epoch;
	size_t stride, bytes;
	uint8_t *pending, *pub;
	int have_pending;
};

/* what happened to one band */
struct bsim_band_stats {
	int final_pair;      /* the last decision's pair */
	int last_change;     /* band_seq of the last change of pair (0: never changed) */
	int last_explore;    /* band_seq + 1 of the last decision that was not the final pair */
	uint64_t n;          /* collectives */
};

struct bsim {
	int nr;
	struct bsim_rank r[SM_MAX_RANKS];
	struct bsim_agreed ag[BSIM_MAX_AGREED];
	int n_ag;
	struct sm_model *m;
	int no_profiler;          /* the profiler plugin is not loaded */
	int untimed_every_other;  /* every other collective without KernelCh */
	int no_api_events;        /* profiler v1-v4: api_ns 0 */
	/* the profiler sees a step's completions this many steps later than the model's
	 * `queued` host would (0..BSIM_MAX_LAG): a host that never waits is as far ahead as
	 * CUDA's launch queue allows (~130 steps on the GPU testbed, `--step-queued`), so what
	 * the tuner decided reaches the published statistics that much later */
	int profiler_lag_steps;
	/* 0: that lead from the first step on; N: it builds up by N/100 steps per step of the
	 * GPU until profiler_lag_steps, as on the GPU testbed, where the host fills CUDA's
	 * launch queue over the first steps (a host 5x as fast as the GPU: 400) */
	int profiler_lag_ramp_pct;
	uint64_t api_shift_ns;     /* what that lead is in time (constant lead: set at the first
				    * completion) */
	double lead_step_us;       /* a step's time for that (the first completion's) */
	/* results */
	double step_us[BSIM_MAX_STEPS];
	int steps;
	long mismatches;          /* collectives where the ranks decided differently */
	long unavailable;         /* decisions naming a pair NCCL does not offer */
	long forced;              /* decisions that forced a pair */
	long timed, untimed;      /* rank 0's collectives with / without KernelCh */
	long late_timed, late_n;  /* the same from late_from_step on */
	int late_from_step;
	struct bsim_band_stats band[SM_MAX_BANDS];
	int decision_pair[BSIM_MAX_STEPS][SM_MAX_CALLS]; /* per step and call (first steps) */
	/* pending completions */
	struct sm_coll *fifo;      /* (BSIM_MAX_LAG + 2) * SM_MAX_CALLS */
	int (*fifo_timed)[SM_MAX_RANKS];
	int fifo_n;
	char err[512];
};

/* Opens the object once per rank (programs: tuner_prog, prof_prog). 0 or -1 (err). */
int bsim_open(struct bsim *s, const char *obj_path, const char *tuner_prog, const char *prof_prog,
	      struct sm_model *m);
void bsim_close(struct bsim *s);
/* Runs `steps` steps of the model's workload. */
void bsim_run(struct bsim *s, int steps);
/* Mean step time over steps [from, to). */
double bsim_mean_step(const struct bsim *s, int from, int to);
/* Sum of step times over [from, to). */
double bsim_sum_steps(const struct bsim *s, int from, int to);

#endif

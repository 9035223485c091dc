/* The KernelCh sampler's rules for steered bands, as profiler_sample_coll applies them
 * (src/plugin/profiler/profiler_sample.c), for the bandit's simulated timelines, where the
 * next bands are known instead of predicted: whether the collective after the current one
 * carries KernelCh. Bands without a request (v = 0) are always timed here (the product
 * times them by rate). One copy for test_bandit.c and bandit_sim.c: a rule missing from a
 * model changes which samples a policy gets (the successor rule was missing once, and the
 * step's last band lost its samples). */
#ifndef NCCLBPF_TESTS_BANDIT_SAMPLE_MODEL_H
#define NCCLBPF_TESTS_BANDIT_SAMPLE_MODEL_H

#include <stdint.h>

#include "plugin/profiler/profiler.h"

/* v_cur, v1, v2: the requests of the current collective's band, the next's and the one
 * after; seen_*: the collectives of each band so far, the current one included; timed:
 * whether the current one carries KernelCh. */
static inline int sample_model_next(uint32_t v_cur, uint32_t seen_cur, int timed, uint32_t b1,
				    uint32_t v1, uint32_t seen1, uint32_t b2, uint32_t v2,
				    uint32_t seen2)
{
	/* the next band's request */
	int due1 = v1 ? profiler_sample_steered_due(v1, seen1) : 1;
	/* the one after it: its sample also needs the collective before it */
	int due2 = v2 && profiler_sample_steered_due(v2, seen2 + (b2 == b1));
	/* the collective after a steered sample (where its hold on the stream ends) */
	int due0 = timed && v_cur && profiler_sample_steered_due(v_cur, seen_cur - 1);
	return due1 || due2 || due0;
}

#endif

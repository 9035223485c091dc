/* Shared helpers of the profiler tests: an observer that records completed collectives,
 * and the linked-in profiler tables by version. */
#ifndef NCCLBPF_TESTS_PROF_TEST_UTIL_H
#define NCCLBPF_TESTS_PROF_TEST_UTIL_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/profiler/profiler.h"
#include "plugin/profiler/profiler_versions.h"
#include "profiler_host.h"

#define OBS_MAX 4096
struct obs {
	_Atomic int n;
	struct ncclbpf_profiler_ctx last;
	struct ncclbpf_profiler_ctx all[OBS_MAX];
};

static inline void obs_fn(const struct ncclbpf_profiler_ctx *pc, void *arg)
{
	struct obs *o = arg;
	int i = atomic_fetch_add(&o->n, 1);
	if (i < OBS_MAX)
		o->all[i] = *pc;
	o->last = *pc;
}

static inline const void *prof_table(int v)
{
	switch (v) {
	case 1: return &ncclProfiler_v1;
	case 2: return &ncclProfiler_v2;
	case 3: return &ncclProfiler_v3;
	case 4: return &ncclProfiler_v4;
	case 5: return &ncclProfiler_v5;
	case 6: return &ncclProfiler_v6;
	default: return &ncclProfiler_v7;
	}
}

/* Tests of the per-collective path instrument every collective (NCCLBPF_PROFILE_SAMPLE=1);
 * the sampling tests (test_profiler_sampling.c) set their own value. */
static inline void prof_set_mode(const char *mode)
{
	setenv("NCCLBPF_PROFILE_SAMPLE", "1", 1);
	if (mode)
		setenv("NCCLBPF_PROFILE", mode, 1);
	else
		unsetenv("NCCLBPF_PROFILE");
	profiler_reset_mode_for_tests();
}

#endif

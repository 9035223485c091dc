/* Helpers shared by the per-version profiler entry points (profiler_v1.c .. _v6.c). */
#ifndef NCCLBPF_PLUGIN_PROFILER_VERSIONS_H
#define NCCLBPF_PLUGIN_PROFILER_VERSIONS_H

#include "plugin/profiler/profiler.h"

/* The v5 union is a prefix of the v6 union: both translate through this. */
void profiler_desc_from_v5_union(struct profiler_desc *o, uint64_t type, void *parent, int rank,
				 const struct nb_prof_descr_v5 *d);
/* CeColl / CeSync / CeBatch of v6 (v7's are v6's with userTag appended). */
void profiler_desc_from_v6_ce(struct profiler_desc *o, const struct nb_prof_descr_v6 *d);
void profiler_state_from_v4(struct profiler_state_args *o, int state,
			    const union nb_prof_state_args_v4 *a);
/* recordEventState for v4..v6 (same state-args union). */
int profiler_record_v4args(void *h, nb_prof_state_t st, union nb_prof_state_args_v4 *a);
/* recordEventState for v1..v3. */
int profiler_record_v1args(void *h, nb_prof_state_t st, union nb_prof_state_args_v1 *a);

extern const struct nb_profiler_v1 ncclProfiler_v1;
extern const struct nb_profiler_v2 ncclProfiler_v2;
extern const struct nb_profiler_v3 ncclProfiler_v3;
extern const struct nb_profiler_v4 ncclProfiler_v4;
extern const struct nb_profiler_v5 ncclProfiler_v5;
extern const struct nb_profiler_v6 ncclProfiler_v6;
extern const struct nb_profiler_v7 ncclProfiler_v7;

#endif

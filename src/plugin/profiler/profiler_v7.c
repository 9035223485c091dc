/* ncclProfiler_v7 (NCCL 2.31 native): v6 plus the per-call user tag (ncclCollConfig_t
 * userProfilerTag) on API, Coll, P2p and CeColl events, the symmetric-kernel flag and kernel
 * variant on Coll, and KernelPhase sub-events (start with a GPU timestamp, state
 * KernelPhaseStop carrying the stop timestamp). Everything else reuses the v5/v6
 * translation: the v7 members are v6's with fields appended. */
#include <stddef.h>
#include <string.h>

#include "plugin/profiler/profiler.h"
#include "plugin/profiler/profiler_versions.h"

#define NB_EXPORT __attribute__((visibility("default")))

/* Layout facts (ref nccl-2.31-and-ecosystem.md §1.3): same header, every v6 member at the
 * same offset with the same prefix, 136 bytes on x86-64. */
_Static_assert(offsetof(struct nb_prof_descr_v7, coll) == offsetof(struct nb_prof_descr_v6, coll),
	       "v7 union must start where v6's does");
_Static_assert(offsetof(struct nb_prof_descr_v7, coll.parentGroup) ==
		       offsetof(struct nb_prof_descr_v6, coll.parentGroup),
	       "v7 coll is v6 coll + appended fields");
_Static_assert(offsetof(struct nb_prof_descr_v7, ceColl.stream) ==
		       offsetof(struct nb_prof_descr_v6, ceColl.stream),
	       "v7 ceColl is v6 ceColl + userTag");
_Static_assert(sizeof(void *) != 8 || sizeof(struct nb_prof_descr_v7) == 136, "v7 size");

static nb_nccl_result_t v7_init(void **context, uint64_t commId, int *mask, const char *commName,
				int nNodes, int nranks, int rank, nb_nccl_logger_t logfn)
{
	struct profiler_init_args a = {.version = 7, .comm_id = commId, .comm_name = commName,
				       .n_nodes = nNodes, .n_ranks = nranks, .rank = rank,
				       .logger = logfn};
	return profiler_init(context, mask, &a);
}

static nb_nccl_result_t v7_start(void *context, void **handle, struct nb_prof_descr_v7 *d)
{
	if (!d) {
		if (handle)
			*handle = NULL;
		return NB_NCCL_SUCCESS;
	}
	struct profiler_desc o;
	switch (d->type) {
	case NB_PROF_CE_COLL:
	case NB_PROF_CE_SYNC:
	case NB_PROF_CE_BATCH:
		profiler_desc_from_v6_ce(&o, (const struct nb_prof_descr_v6 *)(const void *)d);
		if (d->type == NB_PROF_CE_COLL)
			o.user_tag = d->ceColl.userTag;
		break;
	case NB_PROF_KERNEL_PHASE:
		memset(&o, 0, sizeof(o));
		o.type = NB_PROF_KERNEL_PHASE;
		o.parent = d->parentObj;
		o.rank = d->rank;
		o.coll_type = o.algo = o.proto = o.peer = -1;
		o.channel = d->kernelPhase.channelId;
		o.phase = d->kernelPhase.phaseId;
		o.gpu_ts = d->kernelPhase.pTimer;
		break;
	default:
		profiler_desc_from_v5_union(&o, d->type, d->parentObj, d->rank,
					    (const struct nb_prof_descr_v5 *)(const void *)d);
		switch (d->type) {
		case NB_PROF_COLL:
			o.user_tag = d->coll.userTag;
			o.kernel_variant = d->coll.kernelVariant;
			if (d->coll.isSymColl) {
				o.is_sym = true;
				o.algo = NCCLBPF_ALGO_SYMMETRIC;
				o.proto = -1;
			}
			break;
		case NB_PROF_COLL_API:
			o.user_tag = d->collApi.userTag;
			break;
		case NB_PROF_P2P_API:
			o.user_tag = d->p2pApi.userTag;
			break;
		case NB_PROF_P2P:
			o.user_tag = d->p2p.userTag;
			break;
		default:
			break;
		}
		break;
	}
	o.raw = d;
	return profiler_start(context, handle, &o);
}

NB_EXPORT const struct nb_profiler_v7 ncclProfiler_v7 = {
	.name = "ncclbpf",
	.init = v7_init,
	.startEvent = v7_start,
	.stopEvent = profiler_stop,
	.recordEventState = profiler_record_v4args,
	.finalize = profiler_finalize,
};

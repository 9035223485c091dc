/* ncclProfiler_v6 (NCCL 2.29/2.30 native): the v5 descriptor plus copy-engine events
 * (CeColl, CeSync, CeBatch) appended to the union. CE events are start/stop only. */
#include <stddef.h>
#include <string.h>

#include "plugin/profiler/profiler.h"
#include "plugin/profiler/profiler_versions.h"

#define NB_EXPORT __attribute__((visibility("default")))

_Static_assert(offsetof(struct nb_prof_descr_v6, coll) == offsetof(struct nb_prof_descr_v5, coll),
	       "v6 union must start where v5's does");
_Static_assert(sizeof(((struct nb_prof_descr_v6 *)0)->coll) ==
		       sizeof(((struct nb_prof_descr_v5 *)0)->coll),
	       "v6 coll member must equal v5's");

static nb_nccl_result_t v6_init(void **context, uint64_t commId, int *mask, const char *commName,
				int nNodes, int nranks, int rank, nb_nccl_logger_t logfn)
{
	struct profiler_init_args a = {.version = 6, .comm_id = commId, .comm_name = commName,
				       .n_nodes = nNodes, .n_ranks = nranks, .rank = rank,
				       .logger = logfn};
	return profiler_init(context, mask, &a);
}

static nb_nccl_result_t v6_start(void *context, void **handle, struct nb_prof_descr_v6 *d)
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
		profiler_desc_from_v6_ce(&o, d);
		break;
	default:
		/* identical layout up to netPlugin (asserted above) */
		profiler_desc_from_v5_union(&o, d->type, d->parentObj, d->rank,
					    (const struct nb_prof_descr_v5 *)(const void *)d);
		break;
	}
	o.raw = d;
	return profiler_start(context, handle, &o);
}

void profiler_desc_from_v6_ce(struct profiler_desc *o_, const struct nb_prof_descr_v6 *d)
{
	struct profiler_desc o;
	switch (d->type) {
	case NB_PROF_CE_COLL:
		memset(&o, 0, sizeof(o));
		o.type = NB_PROF_CE_COLL;
		o.parent = d->parentObj;
		o.rank = d->rank;
		o.seq = d->ceColl.seqNumber;
		o.func = d->ceColl.func;
		o.coll_type = profiler_coll_type_from_name(d->ceColl.func);
		o.count = d->ceColl.count;
		o.type_size = profiler_type_size_from_name(d->ceColl.datatype);
		o.root = d->ceColl.root;
		o.algo = o.proto = o.channel = o.peer = -1;
		break;
	case NB_PROF_CE_SYNC:
	case NB_PROF_CE_BATCH:
		memset(&o, 0, sizeof(o));
		o.type = (uint32_t)d->type;
		o.parent = d->parentObj;
		o.rank = d->rank;
		o.coll_type = o.algo = o.proto = o.channel = o.peer = -1;
		if (d->type == NB_PROF_CE_BATCH)
			o.ce_bytes = d->ceCollBatch.totalBytes;
		else
			o.count = (uint64_t)d->ceCollSync.nRanks;
		break;
	default:
		memset(&o, 0, sizeof(o));
		break;
	}
	*o_ = o;
}

NB_EXPORT const struct nb_profiler_v6 ncclProfiler_v6 = {
	.name = "ncclbpf",
	.init = v6_init,
	.startEvent = v6_start,
	.stopEvent = profiler_stop,
	.recordEventState = profiler_record_v4args,
	.finalize = profiler_finalize,
};

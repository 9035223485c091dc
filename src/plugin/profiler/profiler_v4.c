/* ncclProfiler_v4 (NCCL 2.27 native; 2.28+ through NCCL's shim): uint8 event type, no API
 * events, no parentGroup; KernelCh carries the GPU start timestamp. init takes
 * (ctx, mask, commName, commHash, ...). */
#include <string.h>

#include "plugin/profiler/profiler.h"
#include "plugin/profiler/profiler_versions.h"

#define NB_EXPORT __attribute__((visibility("default")))

static nb_nccl_result_t v4_init(void **context, int *mask, const char *commName,
				uint64_t commHash, int nNodes, int nranks, int rank,
				nb_nccl_logger_t logfn)
{
	struct profiler_init_args a = {.version = 4, .comm_id = commHash, .comm_name = commName,
				       .n_nodes = nNodes, .n_ranks = nranks, .rank = rank,
				       .logger = logfn};
	return profiler_init(context, mask, &a);
}

static nb_nccl_result_t v4_start(void *context, void **handle, struct nb_prof_descr_v4 *d)
{
	if (!d) {
		if (handle)
			*handle = NULL;
		return NB_NCCL_SUCCESS;
	}
	struct profiler_desc o;
	memset(&o, 0, sizeof(o));
	o.type = d->type;
	o.parent = d->parentObj;
	o.rank = d->rank;
	o.coll_type = o.algo = o.proto = o.channel = o.peer = -1;
	switch (d->type) {
	case NB_PROF_COLL:
		o.seq = d->coll.seqNumber;
		o.func = d->coll.func;
		o.coll_type = profiler_coll_type_from_name(d->coll.func);
		o.count = d->coll.count;
		o.type_size = profiler_type_size_from_name(d->coll.datatype);
		o.root = d->coll.root;
		o.n_channels = d->coll.nChannels;
		o.algo = profiler_algo_from_name(d->coll.algo);
		o.proto = profiler_proto_from_name(d->coll.proto);
		break;
	case NB_PROF_P2P:
		o.func = d->p2p.func;
		o.count = d->p2p.count;
		o.type_size = profiler_type_size_from_name(d->p2p.datatype);
		o.peer = d->p2p.peer;
		o.n_channels = d->p2p.nChannels;
		break;
	case NB_PROF_PROXY_OP:
		o.pid = d->proxyOp.pid;
		o.channel = d->proxyOp.channelId;
		o.peer = d->proxyOp.peer;
		o.n_steps = d->proxyOp.nSteps;
		o.chunk_size = d->proxyOp.chunkSize;
		o.is_send = d->proxyOp.isSend;
		break;
	case NB_PROF_PROXY_STEP:
		o.step = d->proxyStep.step;
		break;
	case NB_PROF_KERNEL_CH:
		o.channel = d->kernelCh.channelId;
		o.gpu_ts = d->kernelCh.pTimer;
		break;
	case NB_PROF_NET_PLUGIN:
		o.plugin_id = d->netPlugin.id;
		break;
	default:
		break;
	}
	o.raw = d;
	return profiler_start(context, handle, &o);
}

NB_EXPORT const struct nb_profiler_v4 ncclProfiler_v4 = {
	.name = "ncclbpf",
	.init = v4_init,
	.startEvent = v4_start,
	.stopEvent = profiler_stop,
	.recordEventState = profiler_record_v4args,
	.finalize = profiler_finalize,
};

/* ncclProfiler_v5 (NCCL 2.28 native) and the v5/v6 descriptor translation shared with
 * profiler_v6.c. v5 adds the API events (GroupApi, CollApi, P2pApi, KernelLaunch) and
 * coll.parentGroup; init takes commId second. */
#include <string.h>

#include "plugin/profiler/profiler.h"
#include "plugin/profiler/profiler_versions.h"

#define NB_EXPORT __attribute__((visibility("default")))

void profiler_desc_from_v5_union(struct profiler_desc *o, uint64_t type, void *parent, int rank,
				 const struct nb_prof_descr_v5 *d)
{
	memset(o, 0, sizeof(*o));
	o->type = (uint32_t)type;
	o->parent = parent;
	o->rank = rank;
	o->coll_type = -1;
	o->algo = -1;
	o->proto = -1;
	o->channel = -1;
	o->peer = -1;
	switch (type) {
	case NB_PROF_GROUP_API:
		o->group_depth = d->groupApi.groupDepth;
		o->graph_captured = d->groupApi.graphCaptured;
		break;
	case NB_PROF_COLL_API:
		o->func = d->collApi.func;
		o->coll_type = profiler_coll_type_from_name(d->collApi.func);
		o->count = d->collApi.count;
		o->type_size = profiler_type_size_from_name(d->collApi.datatype);
		o->root = d->collApi.root;
		o->graph_captured = d->collApi.graphCaptured;
		break;
	case NB_PROF_P2P_API:
		o->func = d->p2pApi.func;
		o->count = d->p2pApi.count;
		o->type_size = profiler_type_size_from_name(d->p2pApi.datatype);
		o->graph_captured = d->p2pApi.graphCaptured;
		break;
	case NB_PROF_COLL:
		o->seq = d->coll.seqNumber;
		o->func = d->coll.func;
		o->coll_type = profiler_coll_type_from_name(d->coll.func);
		o->count = d->coll.count;
		o->type_size = profiler_type_size_from_name(d->coll.datatype);
		o->root = d->coll.root;
		o->n_channels = d->coll.nChannels;
		o->parent_group = d->coll.parentGroup;
		o->algo = profiler_algo_from_name(d->coll.algo);
		o->proto = profiler_proto_from_name(d->coll.proto);
		/* NCCL 2.31 through the v5/v6 shims: a symmetric kernel reports its variant as
		 * the algorithm and "" as the protocol */
		if (o->algo < 0 && d->coll.proto && !d->coll.proto[0] && d->coll.algo &&
		    d->coll.algo[0]) {
			o->algo = NCCLBPF_ALGO_SYMMETRIC;
			o->is_sym = true;
			o->kernel_variant = d->coll.algo;
		}
		break;
	case NB_PROF_P2P:
		o->func = d->p2p.func;
		o->count = d->p2p.count;
		o->type_size = profiler_type_size_from_name(d->p2p.datatype);
		o->peer = d->p2p.peer;
		o->n_channels = d->p2p.nChannels;
		o->parent_group = d->p2p.parentGroup;
		break;
	case NB_PROF_PROXY_OP:
		o->pid = d->proxyOp.pid;
		o->channel = d->proxyOp.channelId;
		o->peer = d->proxyOp.peer;
		o->n_steps = d->proxyOp.nSteps;
		o->chunk_size = d->proxyOp.chunkSize;
		o->is_send = d->proxyOp.isSend;
		break;
	case NB_PROF_PROXY_STEP:
		o->step = d->proxyStep.step;
		break;
	case NB_PROF_KERNEL_CH:
		o->channel = d->kernelCh.channelId;
		o->gpu_ts = d->kernelCh.pTimer;
		break;
	case NB_PROF_NET_PLUGIN:
		o->plugin_id = d->netPlugin.id;
		break;
	default: /* Group, ProxyCtrl, KernelLaunch: header only */
		break;
	}
}

void profiler_state_from_v4(struct profiler_state_args *o, int state,
			    const union nb_prof_state_args_v4 *a)
{
	memset(o, 0, sizeof(*o));
	if (!a)
		return;
	o->has_args = true;
	switch (state) {
	case NB_PROF_ST_KERNEL_CH_STOP:
	case NB_PROF_ST_KERNEL_PHASE_STOP: /* v7: the phase's stop reuses the kernelCh member */
		o->gpu_ts = a->kernelCh.pTimer;
		break;
	case NB_PROF_ST_PROXY_STEP_SEND_GPU_WAIT:
	case NB_PROF_ST_PROXY_STEP_SEND_PEER_WAIT_V4:
	case NB_PROF_ST_PROXY_STEP_SEND_WAIT:
	case NB_PROF_ST_PROXY_STEP_RECV_WAIT:
	case NB_PROF_ST_PROXY_STEP_RECV_FLUSH_WAIT:
	case NB_PROF_ST_PROXY_STEP_RECV_GPU_WAIT:
		o->trans_size = a->proxyStep.transSize;
		break;
	case NB_PROF_ST_PROXY_CTRL_APPEND:
	case NB_PROF_ST_PROXY_CTRL_APPEND_END:
		o->appended_ops = a->proxyCtrl.appendedProxyOps;
		break;
	default:
		break;
	}
}

int profiler_record_v4args(void *h, nb_prof_state_t st, union nb_prof_state_args_v4 *a)
{
	struct profiler_state_args o;
	profiler_state_from_v4(&o, st, a);
	o.raw = a;
	return profiler_record(h, st, &o);
}

static nb_nccl_result_t v5_init(void **context, uint64_t commId, int *mask, const char *commName,
				int nNodes, int nranks, int rank, nb_nccl_logger_t logfn)
{
	struct profiler_init_args a = {.version = 5, .comm_id = commId, .comm_name = commName,
				       .n_nodes = nNodes, .n_ranks = nranks, .rank = rank,
				       .logger = logfn};
	return profiler_init(context, mask, &a);
}

static nb_nccl_result_t v5_start(void *context, void **handle, struct nb_prof_descr_v5 *d)
{
	if (!d) {
		if (handle)
			*handle = NULL;
		return NB_NCCL_SUCCESS;
	}
	struct profiler_desc o;
	profiler_desc_from_v5_union(&o, d->type, d->parentObj, d->rank, d);
	o.raw = d;
	return profiler_start(context, handle, &o);
}

NB_EXPORT const struct nb_profiler_v5 ncclProfiler_v5 = {
	.name = "ncclbpf",
	.init = v5_init,
	.startEvent = v5_start,
	.stopEvent = profiler_stop,
	.recordEventState = profiler_record_v4args,
	.finalize = profiler_finalize,
};

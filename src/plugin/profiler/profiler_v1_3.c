/* ncclProfiler_v1, _v2, _v3 (NCCL 2.23 .. 2.26 native; 2.27+ through NCCL's shims).
 * No commHash at init (the Coll descriptor carries it from v1 on, 0 under 2.28+ shims),
 * no GPU timestamps (v3 KernelCh has a channel id only), proxyOp state arguments. */
#include <string.h>

#include "plugin/profiler/profiler.h"
#include "plugin/profiler/profiler_versions.h"

#define NB_EXPORT __attribute__((visibility("default")))

/* v1 encodes func/algo/proto as small enums: ncclFunc_t and NCCL_ALGO_x / NCCL_PROTO_x. */
static const char *const v1_func_names[] = {"Broadcast", "Reduce", "AllGather",
					    "ReduceScatter", "AllReduce", "SendRecv", "Send",
					    "Recv"};

int profiler_record_v1args(void *h, nb_prof_state_t st, union nb_prof_state_args_v1 *a)
{
	struct profiler_state_args o;
	memset(&o, 0, sizeof(o));
	if (a) {
		o.has_args = true;
		if (st == NB_PROF_ST_PROXY_CTRL_APPEND || st == NB_PROF_ST_PROXY_CTRL_APPEND_END)
			o.appended_ops = a->proxyCtrl.appendedProxyOps;
		else if (st <= NB_PROF_ST_PROXY_STEP_RECV_GPU_WAIT)
			o.trans_size = a->proxyOp.transSize;
	}
	o.raw = a;
	return profiler_record(h, st, &o);
}

static void base(struct profiler_desc *o, uint8_t type, void *parent, int rank)
{
	memset(o, 0, sizeof(*o));
	o->type = type;
	o->parent = parent;
	o->rank = rank;
	o->coll_type = o->algo = o->proto = o->channel = o->peer = -1;
}

static void proxy_op(struct profiler_desc *o, const struct nb_prof_proxy_op_d *p)
{
	o->pid = p->pid;
	o->channel = p->channelId;
	o->peer = p->peer;
	o->n_steps = p->nSteps;
	o->chunk_size = p->chunkSize;
	o->is_send = p->isSend;
}

static nb_nccl_result_t v1_init(void **context, int *mask)
{
	struct profiler_init_args a = {.version = 1, .n_ranks = 0, .rank = -1};
	return profiler_init(context, mask, &a);
}
static nb_nccl_result_t v2_init(void **context, int *mask)
{
	struct profiler_init_args a = {.version = 2, .n_ranks = 0, .rank = -1};
	return profiler_init(context, mask, &a);
}
static nb_nccl_result_t v3_init(void **context, int *mask)
{
	struct profiler_init_args a = {.version = 3, .n_ranks = 0, .rank = -1};
	return profiler_init(context, mask, &a);
}

static nb_nccl_result_t v1_start(void *context, void **handle, struct nb_prof_descr_v1 *d)
{
	if (!d) {
		if (handle)
			*handle = NULL;
		return NB_NCCL_SUCCESS;
	}
	struct profiler_desc o;
	base(&o, d->type, d->parentObj, d->rank);
	switch (d->type) {
	case NB_PROF_COLL:
		o.comm_hash = d->coll.commHash;
		o.seq = d->coll.seqNumber;
		o.func = d->coll.func < 8 ? v1_func_names[d->coll.func] : NULL;
		o.coll_type = d->coll.func < NCCLBPF_NUM_COLLS ? d->coll.func : -1;
		o.count = d->coll.count;
		o.type_size = profiler_type_size_from_id(d->coll.datatype);
		o.root = d->coll.root;
		o.n_channels = d->coll.nMaxChannels;
		o.algo = d->coll.algo < NCCLBPF_NUM_ALGOS ? d->coll.algo : -1;
		o.proto = d->coll.proto < NCCLBPF_NUM_PROTOS ? d->coll.proto : -1;
		break;
	case NB_PROF_P2P:
		o.func = d->p2p.func < 8 ? v1_func_names[d->p2p.func] : NULL;
		o.count = d->p2p.count;
		o.type_size = profiler_type_size_from_id(d->p2p.datatype);
		o.peer = d->p2p.peer;
		break;
	case NB_PROF_PROXY_OP:
		proxy_op(&o, &d->proxyOp);
		break;
	case NB_PROF_PROXY_STEP:
		o.step = d->proxyStep.step;
		break;
	default:
		break;
	}
	o.raw = d;
	return profiler_start(context, handle, &o);
}

/* v2 and v3 name their string-based coll/p2p fields identically but lay them out
 * differently (v2 has trafficBytes before nMaxChannels), so one field-by-name macro serves
 * both struct types. */
#define FILL_STRING_COLL_P2P(o, d)                                                        \
	do {                                                                              \
		if ((d)->type == NB_PROF_COLL) {                                          \
			(o)->comm_hash = (d)->coll.commHash;                              \
			(o)->seq = (d)->coll.seqNumber;                                   \
			(o)->func = (d)->coll.func;                                       \
			(o)->coll_type = profiler_coll_type_from_name((d)->coll.func);    \
			(o)->count = (d)->coll.count;                                     \
			(o)->type_size = profiler_type_size_from_name((d)->coll.datatype);\
			(o)->root = (d)->coll.root;                                       \
			(o)->n_channels = (d)->coll.nMaxChannels;                         \
			(o)->algo = profiler_algo_from_name((d)->coll.algo);              \
			(o)->proto = profiler_proto_from_name((d)->coll.proto);           \
		} else {                                                                  \
			(o)->func = (d)->p2p.func;                                        \
			(o)->count = (d)->p2p.count;                                      \
			(o)->type_size = profiler_type_size_from_name((d)->p2p.datatype); \
			(o)->peer = (d)->p2p.peer;                                        \
		}                                                                         \
	} while (0)
static nb_nccl_result_t v2_start(void *context, void **handle, struct nb_prof_descr_v2 *d)
{
	if (!d) {
		if (handle)
			*handle = NULL;
		return NB_NCCL_SUCCESS;
	}
	struct profiler_desc o;
	base(&o, d->type, d->parentObj, d->rank);
	switch (d->type) {
	case NB_PROF_COLL:
	case NB_PROF_P2P:
		FILL_STRING_COLL_P2P(&o, d);
		break;
	case NB_PROF_PROXY_OP:
		proxy_op(&o, &d->proxyOp);
		break;
	case NB_PROF_PROXY_STEP:
		o.step = d->proxyStep.step;
		break;
	default:
		break;
	}
	o.raw = d;
	return profiler_start(context, handle, &o);
}

static nb_nccl_result_t v3_start(void *context, void **handle, struct nb_prof_descr_v3 *d)
{
	if (!d) {
		if (handle)
			*handle = NULL;
		return NB_NCCL_SUCCESS;
	}
	struct profiler_desc o;
	base(&o, d->type, d->parentObj, d->rank);
	switch (d->type) {
	case NB_PROF_COLL:
	case NB_PROF_P2P:
		FILL_STRING_COLL_P2P(&o, d);
		break;
	case NB_PROF_PROXY_OP:
		proxy_op(&o, &d->proxyOp);
		break;
	case NB_PROF_PROXY_STEP:
		o.step = d->proxyStep.step;
		break;
	case NB_PROF_KERNEL_CH:
		o.channel = d->kernelCh.channelId;
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

NB_EXPORT const struct nb_profiler_v1 ncclProfiler_v1 = {
	.name = "ncclbpf", .init = v1_init, .startEvent = v1_start, .stopEvent = profiler_stop,
	.recordEventState = profiler_record_v1args, .finalize = profiler_finalize,
};
NB_EXPORT const struct nb_profiler_v2 ncclProfiler_v2 = {
	.name = "ncclbpf", .init = v2_init, .startEvent = v2_start, .stopEvent = profiler_stop,
	.recordEventState = profiler_record_v1args, .finalize = profiler_finalize,
};
NB_EXPORT const struct nb_profiler_v3 ncclProfiler_v3 = {
	.name = "ncclbpf", .init = v3_init, .startEvent = v3_start, .stopEvent = profiler_stop,
	.recordEventState = profiler_record_v1args, .finalize = profiler_finalize,
};

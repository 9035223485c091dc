/* Mock NCCL host, profiler side: see profiler_host.h. */
#include "profiler_host.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ncclbpf/policy.h"
#include "plugin/profiler/nccl_profiler_abi.h"

uint64_t ph_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

const char *ph_func_name(int t)
{
	static const char *const n[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
					"AllReduce"};
	return t >= 0 && t < 5 ? n[t] : "SendRecv";
}
const char *ph_algo_name(int a)
{
	static const char *const n[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
					"NVLS", "NVLS_TREE", "PAT"};
	return a >= 0 && a < 7 ? n[a] : "UNDEF";
}
const char *ph_proto_name(int p)
{
	static const char *const n[] = {"LL", "LL128", "SIMPLE"};
	return p >= 0 && p < 3 ? n[p] : "UNDEF";
}

int ph_open(struct ph_host *h, const char *so_path, int version, char *err, size_t errlen)
{
	memset(h, 0, sizeof(*h));
	h->dl = dlopen(so_path, RTLD_NOW | RTLD_LOCAL);
	if (!h->dl) {
		snprintf(err, errlen, "dlopen %s: %s", so_path, dlerror());
		return -1;
	}
	char sym[32];
	snprintf(sym, sizeof(sym), "ncclProfiler_v%d", version);
	h->table = dlsym(h->dl, sym);
	if (!h->table) {
		snprintf(err, errlen, "%s not exported by %s", sym, so_path);
		dlclose(h->dl);
		h->dl = NULL;
		return -1;
	}
	h->version = version;
	return 0;
}

void ph_open_table(struct ph_host *h, int version, const void *table)
{
	memset(h, 0, sizeof(*h));
	h->version = version;
	h->table = table;
}

void ph_close(struct ph_host *h)
{
	if (h->dl)
		dlclose(h->dl);
	h->dl = NULL;
}

bool ph_enabled(const struct ph_host *h, uint32_t type)
{
	/* NCCL re-reads the shared mask with a relaxed load at each call */
	return (__atomic_load_n(&h->mask, __ATOMIC_RELAXED) & (int)type) != 0;
}

int ph_comm_init(struct ph_host *h, struct ph_comm *c, uint64_t comm_id, const char *name,
		 int n_nodes, int n_ranks, int rank)
{
	memset(c, 0, sizeof(*c));
	c->host = h;
	c->comm_id = comm_id;
	c->rank = rank;
	c->n_ranks = n_ranks;
	c->n_nodes = n_nodes;
	switch (h->version) {
	case 1: return ((const struct nb_profiler_v1 *)h->table)->init(&c->ctx, &h->mask);
	case 2: return ((const struct nb_profiler_v2 *)h->table)->init(&c->ctx, &h->mask);
	case 3: return ((const struct nb_profiler_v3 *)h->table)->init(&c->ctx, &h->mask);
	case 4:
		return ((const struct nb_profiler_v4 *)h->table)
			->init(&c->ctx, &h->mask, name, comm_id, n_nodes, n_ranks, rank, NULL);
	case 5:
		return ((const struct nb_profiler_v5 *)h->table)
			->init(&c->ctx, comm_id, &h->mask, name, n_nodes, n_ranks, rank, NULL);
	default:
		return ((const struct nb_profiler_v6 *)h->table)
			->init(&c->ctx, comm_id, &h->mask, name, n_nodes, n_ranks, rank, NULL);
	}
}

int ph_comm_finalize(struct ph_comm *c)
{
	struct ph_host *h = c->host;
	/* every table starts name, init, startEvent, stopEvent, recordEventState, finalize */
	switch (h->version) {
	case 1: return ((const struct nb_profiler_v1 *)h->table)->finalize(c->ctx);
	case 2: return ((const struct nb_profiler_v2 *)h->table)->finalize(c->ctx);
	case 3: return ((const struct nb_profiler_v3 *)h->table)->finalize(c->ctx);
	case 4: return ((const struct nb_profiler_v4 *)h->table)->finalize(c->ctx);
	case 5: return ((const struct nb_profiler_v5 *)h->table)->finalize(c->ctx);
	default: return ((const struct nb_profiler_v6 *)h->table)->finalize(c->ctx);
	}
}

static uint8_t id_of(const char *s, const char *const *names, int n)
{
	for (int i = 0; s && i < n; i++)
		if (!strcmp(s, names[i]))
			return (uint8_t)i;
	return 0xff;
}

int ph_start_raw(struct ph_host *h, void *ctx, void **handle, const struct ph_ev *ev)
{
	static const char *const funcs[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
					    "AllReduce", "SendRecv", "Send", "Recv"};
	static const char *const algos[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN",
					    "NVLS", "NVLS_TREE", "PAT"};
	static const char *const protos[] = {"LL", "LL128", "SIMPLE"};
	static const char *const dtypes[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32",
					     "ncclInt64", "ncclUint64", "ncclFloat16",
					     "ncclFloat32"};
	switch (h->version) {
	case 1: {
		struct nb_prof_descr_v1 d;
		memset(&d, 0, sizeof(d));
		d.type = (uint8_t)ev->type;
		d.parentObj = ev->parent;
		d.rank = ev->rank;
		if (ev->type == NB_PROF_COLL) {
			d.coll.commHash = ev->comm_hash;
			d.coll.seqNumber = ev->seq;
			d.coll.func = id_of(ev->func, funcs, 8);
			d.coll.count = ev->count;
			d.coll.datatype = id_of(ev->dtype, dtypes, 8);
			d.coll.nMaxChannels = (uint8_t)ev->n_channels;
			d.coll.algo = id_of(ev->algo, algos, 7);
			d.coll.proto = id_of(ev->proto, protos, 3);
		} else if (ev->type == NB_PROF_PROXY_OP) {
			d.proxyOp.pid = ev->pid;
			d.proxyOp.channelId = (uint8_t)ev->channel;
			d.proxyOp.peer = ev->peer;
		} else if (ev->type == NB_PROF_PROXY_STEP) {
			d.proxyStep.step = ev->step;
		}
		return ((const struct nb_profiler_v1 *)h->table)->startEvent(ctx, handle, &d);
	}
	case 2: {
		struct nb_prof_descr_v2 d;
		memset(&d, 0, sizeof(d));
		d.type = (uint8_t)ev->type;
		d.parentObj = ev->parent;
		d.rank = ev->rank;
		if (ev->type == NB_PROF_COLL) {
			d.coll.commHash = ev->comm_hash;
			d.coll.seqNumber = ev->seq;
			d.coll.func = ev->func;
			d.coll.count = ev->count;
			d.coll.datatype = ev->dtype;
			d.coll.nMaxChannels = (uint8_t)ev->n_channels;
			d.coll.algo = ev->algo;
			d.coll.proto = ev->proto;
		} else if (ev->type == NB_PROF_PROXY_OP) {
			d.proxyOp.pid = ev->pid;
			d.proxyOp.channelId = (uint8_t)ev->channel;
			d.proxyOp.peer = ev->peer;
		} else if (ev->type == NB_PROF_PROXY_STEP) {
			d.proxyStep.step = ev->step;
		}
		return ((const struct nb_profiler_v2 *)h->table)->startEvent(ctx, handle, &d);
	}
	case 3: {
		struct nb_prof_descr_v3 d;
		memset(&d, 0, sizeof(d));
		d.type = (uint8_t)ev->type;
		d.parentObj = ev->parent;
		d.rank = ev->rank;
		if (ev->type == NB_PROF_COLL) {
			d.coll.commHash = ev->comm_hash;
			d.coll.seqNumber = ev->seq;
			d.coll.func = ev->func;
			d.coll.count = ev->count;
			d.coll.datatype = ev->dtype;
			d.coll.nMaxChannels = (uint8_t)ev->n_channels;
			d.coll.algo = ev->algo;
			d.coll.proto = ev->proto;
		} else if (ev->type == NB_PROF_PROXY_OP) {
			d.proxyOp.pid = ev->pid;
			d.proxyOp.channelId = (uint8_t)ev->channel;
			d.proxyOp.peer = ev->peer;
		} else if (ev->type == NB_PROF_PROXY_STEP) {
			d.proxyStep.step = ev->step;
		} else if (ev->type == NB_PROF_KERNEL_CH) {
			d.kernelCh.channelId = (uint8_t)ev->channel;
		}
		return ((const struct nb_profiler_v3 *)h->table)->startEvent(ctx, handle, &d);
	}
	case 4: {
		struct nb_prof_descr_v4 d;
		memset(&d, 0, sizeof(d));
		d.type = (uint8_t)ev->type;
		d.parentObj = ev->parent;
		d.rank = ev->rank;
		if (ev->type == NB_PROF_COLL) {
			d.coll.seqNumber = ev->seq;
			d.coll.func = ev->func;
			d.coll.count = ev->count;
			d.coll.datatype = ev->dtype;
			d.coll.nChannels = (uint8_t)ev->n_channels;
			d.coll.algo = ev->algo;
			d.coll.proto = ev->proto;
		} else if (ev->type == NB_PROF_PROXY_OP) {
			d.proxyOp.pid = ev->pid;
			d.proxyOp.channelId = (uint8_t)ev->channel;
			d.proxyOp.peer = ev->peer;
		} else if (ev->type == NB_PROF_PROXY_STEP) {
			d.proxyStep.step = ev->step;
		} else if (ev->type == NB_PROF_KERNEL_CH) {
			d.kernelCh.channelId = (uint8_t)ev->channel;
			d.kernelCh.pTimer = ev->ptimer;
		}
		return ((const struct nb_profiler_v4 *)h->table)->startEvent(ctx, handle, &d);
	}
	case 7: {
		/* 2.31: v6 members with appended fields (user tag, symmetric kernel, phases) */
		struct nb_prof_descr_v7 d;
		memset(&d, 0, sizeof(d));
		d.type = ev->type;
		d.parentObj = ev->parent;
		d.rank = ev->rank;
		switch (ev->type) {
		case NB_PROF_GROUP_API:
			d.groupApi.groupDepth = ev->group_depth;
			break;
		case NB_PROF_COLL_API:
			d.collApi.func = ev->func;
			d.collApi.count = ev->count;
			d.collApi.datatype = ev->dtype;
			d.collApi.root = ev->root;
			d.collApi.userTag = ev->user_tag;
			break;
		case NB_PROF_COLL:
			d.coll.seqNumber = ev->seq;
			d.coll.func = ev->func;
			d.coll.count = ev->count;
			d.coll.datatype = ev->dtype;
			d.coll.nChannels = (uint8_t)ev->n_channels;
			d.coll.algo = ev->algo;
			d.coll.proto = ev->proto;
			d.coll.parentGroup = ev->parent_group;
			d.coll.kernelVariant = ev->kernel_variant;
			d.coll.isSymColl = ev->is_sym;
			d.coll.userTag = ev->user_tag;
			break;
		case NB_PROF_PROXY_OP:
			d.proxyOp.pid = ev->pid;
			d.proxyOp.channelId = (uint8_t)ev->channel;
			d.proxyOp.peer = ev->peer;
			break;
		case NB_PROF_PROXY_STEP:
			d.proxyStep.step = ev->step;
			break;
		case NB_PROF_KERNEL_CH:
			d.kernelCh.channelId = (uint8_t)ev->channel;
			d.kernelCh.pTimer = ev->ptimer;
			break;
		case NB_PROF_KERNEL_PHASE:
			d.kernelPhase.channelId = (uint8_t)ev->channel;
			d.kernelPhase.phaseId = (uint8_t)ev->step;
			d.kernelPhase.phaseName = ev->step == 0 ? "initial_sync"
						  : ev->step == 1 ? "compute" : "final_sync";
			d.kernelPhase.pTimer = ev->ptimer;
			break;
		case NB_PROF_NET_PLUGIN:
			d.netPlugin.id = 1 << 16 | 1;
			break;
		case NB_PROF_CE_COLL:
			d.ceColl.seqNumber = ev->seq;
			d.ceColl.func = ev->func;
			d.ceColl.count = ev->count;
			d.ceColl.datatype = ev->dtype;
			d.ceColl.userTag = ev->user_tag;
			break;
		default:
			break;
		}
		return ((const struct nb_profiler_v7 *)h->table)->startEvent(ctx, handle, &d);
	}
	default: {
		struct nb_prof_descr_v6 d; /* v5 is a prefix of v6 */
		memset(&d, 0, sizeof(d));
		d.type = ev->type;
		d.parentObj = ev->parent;
		d.rank = ev->rank;
		switch (ev->type) {
		case NB_PROF_GROUP_API:
			d.groupApi.groupDepth = ev->group_depth;
			break;
		case NB_PROF_COLL_API:
			d.collApi.func = ev->func;
			d.collApi.count = ev->count;
			d.collApi.datatype = ev->dtype;
			d.collApi.root = ev->root;
			break;
		case NB_PROF_COLL:
			d.coll.seqNumber = ev->seq;
			d.coll.func = ev->func;
			d.coll.count = ev->count;
			d.coll.datatype = ev->dtype;
			d.coll.nChannels = (uint8_t)ev->n_channels;
			d.coll.algo = ev->algo;
			d.coll.proto = ev->proto;
			d.coll.parentGroup = ev->parent_group;
			break;
		case NB_PROF_PROXY_OP:
			d.proxyOp.pid = ev->pid;
			d.proxyOp.channelId = (uint8_t)ev->channel;
			d.proxyOp.peer = ev->peer;
			break;
		case NB_PROF_PROXY_STEP:
			d.proxyStep.step = ev->step;
			break;
		case NB_PROF_KERNEL_CH:
			d.kernelCh.channelId = (uint8_t)ev->channel;
			d.kernelCh.pTimer = ev->ptimer;
			break;
		case NB_PROF_NET_PLUGIN:
			d.netPlugin.id = 1 << 16 | 1;
			break;
		case NB_PROF_CE_COLL:
			d.ceColl.seqNumber = ev->seq;
			d.ceColl.func = ev->func;
			d.ceColl.count = ev->count;
			d.ceColl.datatype = ev->dtype;
			break;
		default:
			break;
		}
		if (h->version == 5)
			return ((const struct nb_profiler_v5 *)h->table)
				->startEvent(ctx, handle, (struct nb_prof_descr_v5 *)(void *)&d);
		return ((const struct nb_profiler_v6 *)h->table)->startEvent(ctx, handle, &d);
	}
	}
}

int ph_start_mask(struct ph_comm *c, void **handle, const struct ph_ev *ev, int mask)
{
	*handle = NULL;
	if (!(mask & (int)ev->type))
		return 0;
	return ph_start_raw(c->host, c->ctx, handle, ev);
}

int ph_start(struct ph_comm *c, void **handle, const struct ph_ev *ev)
{
	*handle = NULL;
	if (!ph_enabled(c->host, ev->type))
		return 0; /* NCCL does not call the plugin for a disabled type */
	return ph_start_raw(c->host, c->ctx, handle, ev);
}

int ph_stop(struct ph_host *h, void *handle)
{
	switch (h->version) {
	case 1: return ((const struct nb_profiler_v1 *)h->table)->stopEvent(handle);
	case 2: return ((const struct nb_profiler_v2 *)h->table)->stopEvent(handle);
	case 3: return ((const struct nb_profiler_v3 *)h->table)->stopEvent(handle);
	case 4: return ((const struct nb_profiler_v4 *)h->table)->stopEvent(handle);
	case 5: return ((const struct nb_profiler_v5 *)h->table)->stopEvent(handle);
	default: return ((const struct nb_profiler_v6 *)h->table)->stopEvent(handle);
	}
}

int ph_record(struct ph_host *h, void *handle, int state, uint64_t arg)
{
	if (h->version <= 3) {
		union nb_prof_state_args_v1 a;
		memset(&a, 0, sizeof(a));
		a.proxyOp.transSize = (size_t)arg;
		switch (h->version) {
		case 1:
			return ((const struct nb_profiler_v1 *)h->table)->recordEventState(handle, state, &a);
		case 2:
			return ((const struct nb_profiler_v2 *)h->table)->recordEventState(handle, state, &a);
		default:
			return ((const struct nb_profiler_v3 *)h->table)->recordEventState(handle, state, &a);
		}
	}
	union nb_prof_state_args_v4 a;
	memset(&a, 0, sizeof(a));
	if (state == NB_PROF_ST_KERNEL_CH_STOP || state == NB_PROF_ST_KERNEL_PHASE_STOP)
		a.kernelCh.pTimer = arg;
	else if (state >= NB_PROF_ST_PROXY_CTRL_IDLE && state <= NB_PROF_ST_PROXY_CTRL_APPEND_END)
		a.proxyCtrl.appendedProxyOps = (int)arg;
	else
		a.proxyStep.transSize = (size_t)arg;
	switch (h->version) {
	case 4: return ((const struct nb_profiler_v4 *)h->table)->recordEventState(handle, state, &a);
	case 5: return ((const struct nb_profiler_v5 *)h->table)->recordEventState(handle, state, &a);
	default: return ((const struct nb_profiler_v6 *)h->table)->recordEventState(handle, state, &a);
	}
}

/* Events of one collective on the application thread. */
void ph_coll_app(struct ph_comm *c, struct ph_coll *k)
{
	struct ph_host *h = c->host;
	int v = h->version;
	void *group_api = NULL, *coll_api = NULL, *group = NULL, *launch = NULL;
	int t = k->coll_type >= 0 && k->coll_type < 5 ? k->coll_type : 4;
	k->seq = c->seq[t]++;
	/* NCCL reads its mask once at the API call (ncclProfilerStartGroupApiEvent) and every
	 * event of this task follows that value, whatever the plugin writes afterwards */
	int m = __atomic_load_n(&h->mask, __ATOMIC_RELAXED);
	k->task_mask = m;
	if (v >= 5) {
		/* NCCL emits GroupApi when any of these is on, not only the GroupApi bit */
		const int group_api_mask = 0xfdf; /* all but ProxyCtrl, up to KernelLaunch */
		struct ph_ev e = {.type = NB_PROF_GROUP_API, .group_depth = 1};
		if (m & group_api_mask)
			ph_start_raw(h, c->ctx, &group_api, &e);
		struct ph_ev a = {.type = NB_PROF_COLL_API, .parent = group_api, .user_tag = k->user_tag,
				  .func = ph_func_name(t), .count = k->count, .dtype = "ncclFloat32"};
		ph_start_mask(c, &coll_api, &a, m);
		if (coll_api)
			ph_stop(h, coll_api);
		if (group_api)
			ph_record(h, group_api, NB_PROF_ST_GROUP_END_API_START, 0);
	}
	struct ph_ev g = {.type = NB_PROF_GROUP};
	ph_start_mask(c, &group, &g, m);
	struct ph_ev ce = {.type = NB_PROF_COLL,
			   .parent = v >= 5 ? coll_api : group,
			   .rank = c->rank,
			   .seq = k->seq,
			   .func = ph_func_name(t),
			   .count = k->count,
			   .dtype = "ncclFloat32",
			   /* 2.31: a symmetric kernel reports its variant and no protocol */
			   .algo = k->sym ? "LL_AG" : ph_algo_name(k->algo),
			   .proto = k->sym ? "" : ph_proto_name(k->proto),
			   .n_channels = k->n_channels,
			   .parent_group = group,
			   .comm_hash = v <= 3 ? c->comm_id : 0,
			   .user_tag = k->user_tag,
			   .is_sym = k->sym,
			   .kernel_variant = k->sym ? "LL_AG" : NULL};
	ph_start_mask(c, &k->coll_handle, &ce, m);
	if (v >= 5) {
		struct ph_ev l = {.type = NB_PROF_KERNEL_LAUNCH, .parent = group_api};
		ph_start_mask(c, &launch, &l, m);
	}
	/* the kernel starts on the GPU about now, or where the host's virtual GPU timeline says */
	k->gpu_start = k->gpu_at ? k->gpu_at : ph_now_ns() + PH_GPU_SKEW_NS;
	if (launch)
		ph_stop(h, launch);
	if (k->coll_handle)
		ph_stop(h, k->coll_handle); /* "enqueued" */
	if (group)
		ph_stop(h, group);
	if (group_api)
		ph_stop(h, group_api);
}

static pid_t my_pid(void)
{
	static __thread pid_t pid; /* a syscall per op would dominate the benchmark */
	if (!pid)
		pid = getpid();
	return pid;
}

/* Events of the same collective on the proxy progress thread. */
void ph_coll_proxy(struct ph_comm *c, struct ph_coll *k)
{
	struct ph_host *h = c->host;
	int m = k->task_mask;
	for (int ch = 0; ch < k->n_channels; ch++) {
		void *kch = NULL;
		struct ph_ev e = {.type = NB_PROF_KERNEL_CH, .parent = k->coll_handle,
				  .channel = ch, .ptimer = k->gpu_start};
		ph_start_mask(c, &kch, &e, m);
		if (k->network) {
			void *op = NULL;
			struct ph_ev o = {.type = NB_PROF_PROXY_OP, .parent = k->coll_handle,
					  .rank = c->rank, .channel = ch,
					  .peer = (c->rank + 1) % (c->n_ranks ? c->n_ranks : 1),
					  .pid = k->proxy_pid ? k->proxy_pid : my_pid()};
			ph_start_mask(c, &op, &o, m);
			if (op)
				ph_record(h, op, NB_PROF_ST_PROXY_OP_IN_PROGRESS_V4, 0);
			for (int s = 0; s < (k->steps ? k->steps : 2); s++) {
				void *st = NULL, *np = NULL;
				struct ph_ev se = {.type = NB_PROF_PROXY_STEP, .parent = op,
						   .rank = c->rank, .step = s};
				ph_start_mask(c, &st, &se, m);
				if (st)
					ph_record(h, st, NB_PROF_ST_PROXY_STEP_SEND_WAIT, 65536);
				struct ph_ev ne = {.type = NB_PROF_NET_PLUGIN, .parent = st};
				ph_start_mask(c, &np, &ne, m);
				if (np)
					ph_stop(h, np);
				if (st)
					ph_stop(h, st);
			}
			if (op)
				ph_stop(h, op);
		}
		uint64_t stop = k->gpu_start + k->gpu_ns - (uint64_t)ch * k->stagger_ns;
		/* v7: three barrier phases per channel, children of the KernelCh event */
		for (int ph = 0; h->version >= 7 && ph < 3; ph++) {
			void *pe = NULL;
			uint64_t t0 = k->gpu_start + (stop - k->gpu_start) * (uint64_t)ph / 3;
			struct ph_ev pv = {.type = NB_PROF_KERNEL_PHASE, .parent = kch, .channel = ch,
					   .step = ph, .ptimer = t0};
			ph_start_mask(c, &pe, &pv, m);
			if (pe) {
				ph_record(h, pe, NB_PROF_ST_KERNEL_PHASE_STOP,
					  k->gpu_start + (stop - k->gpu_start) * (uint64_t)(ph + 1) / 3);
				ph_stop(h, pe);
			}
		}
		if (kch) {
			ph_record(h, kch, NB_PROF_ST_KERNEL_CH_STOP, stop);
			ph_stop(h, kch);
		}
	}
}

void ph_coll_run(struct ph_comm *c, struct ph_coll *k)
{
	ph_coll_app(c, k);
	ph_coll_proxy(c, k);
	void *ctrl = NULL;
	struct ph_ev e = {.type = NB_PROF_PROXY_CTRL};
	ph_start(c, &ctrl, &e);
	if (ctrl) {
		ph_record(c->host, ctrl, NB_PROF_ST_PROXY_CTRL_APPEND, 1);
		ph_record(c->host, ctrl, NB_PROF_ST_PROXY_CTRL_IDLE, 0);
		ph_stop(c->host, ctrl);
	}
}

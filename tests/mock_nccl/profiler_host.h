/* Profiler side of the mock NCCL host: drives a profiler plugin table (ncclProfiler_v1..v6,
 * from a dlopen'ed libncclbpf.so or linked in) the way NCCL does: init per communicator with
 * the process-wide activation mask, events only for enabled types (children of a disabled
 * type get a NULL parent), NCCL's order and nesting for a collective:
 *
 *   app thread:   GroupApi > CollApi (start/stop) > GroupApi state GroupEndApiStart >
 *                 Group > Coll(parent CollApi | Group for v1..v4) > KernelLaunch(start/stop)
 *                 > Coll stop ("enqueued") > Group stop > GroupApi stop
 *   proxy thread: per channel KernelCh(parent Coll, pTimer = GPU start)
 *                 [ProxyOp(parent Coll, pid) > state InProgress > ProxyStep(parent ProxyOp)
 *                  > state SendWait > NetPlugin > stops] > state KernelChStop(pTimer = GPU
 *                 stop) > KernelCh stop
 *
 * GPU timestamps are in a "GPU clock" = host CLOCK_MONOTONIC + a fixed skew, so tests can
 * check the conversion back to the host clock. */
#ifndef NCCLBPF_MOCK_PROFILER_HOST_H
#define NCCLBPF_MOCK_PROFILER_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PH_GPU_SKEW_NS 1000000000000ull /* GPU clock = host + 1000 s */

struct ph_host {
	void *dl;          /* dlopen handle, NULL when the table was given directly */
	int version;       /* 1..7 */
	const void *table; /* struct nb_profiler_vN */
	int mask;          /* NCCL's process-wide ncclProfilerEventMask */
};

struct ph_comm {
	struct ph_host *host;
	void *ctx;
	uint64_t comm_id;
	int rank, n_ranks, n_nodes;
	uint64_t seq[5];
};

struct ph_coll {
	int coll_type;          /* NCCLBPF_COLL_* */
	uint64_t count;         /* elements (float32) */
	int algo, proto;        /* NCCLBPF_ALGO_* / PROTO_* */
	int n_channels;
	uint64_t gpu_ns;        /* modelled GPU execution time; channel c runs [start, start+gpu_ns-c*stagger] */
	uint64_t stagger_ns;
	bool network;           /* emit ProxyOp/ProxyStep/NetPlugin (NET transport) */
	int steps;              /* proxy steps per op */
	pid_t proxy_pid;        /* 0 = getpid(); another value = PXN op of another process */
	uint64_t user_tag;      /* v7: ncclCollConfig_t.userProfilerTag of the call */
	bool sym;               /* v7: a symmetric kernel runs (v5/v6 on 2.31: algo = variant, proto "") */
	uint64_t gpu_at;        /* GPU clock of the kernel's start (a host's virtual GPU timeline);
				 * 0: the kernel starts about now */
	/* filled by ph_coll_app for ph_coll_proxy */
	int task_mask;          /* the mask NCCL read at this call's API entry (kept by the task) */
	void *coll_handle;
	uint64_t seq;
	uint64_t gpu_start;     /* GPU clock */
};

/* Resolves ncclProfiler_v<version> in a shared object (RTLD_NOW | RTLD_LOCAL, as NCCL). */
int ph_open(struct ph_host *h, const char *so_path, int version, char *err, size_t errlen);
/* Uses a linked-in table (tests linking the static library). */
void ph_open_table(struct ph_host *h, int version, const void *table);
void ph_close(struct ph_host *h);

/* Calls init with this version's argument order; returns what init returned. */
int ph_comm_init(struct ph_host *h, struct ph_comm *c, uint64_t comm_id, const char *name,
		 int n_nodes, int n_ranks, int rank);
int ph_comm_finalize(struct ph_comm *c);

/* Raw calls, version-dispatched. The neutral descriptor below is translated to the
 * version's layout; fields a version lacks are dropped. */
struct ph_ev {
	uint32_t type;
	void *parent;
	int rank;
	uint64_t seq;
	const char *func, *dtype, *algo, *proto;
	uint64_t count;
	int n_channels, peer, root, channel, step, group_depth;
	pid_t pid;
	uint64_t ptimer;
	void *parent_group;
	uint64_t comm_hash;
	uint64_t user_tag;          /* v7 */
	bool is_sym;                /* v7 Coll */
	const char *kernel_variant; /* v7 Coll */
};
int ph_start(struct ph_comm *c, void **handle, const struct ph_ev *ev);
/* As NCCL does for a task's events: enabled by the mask the task captured at its call. */
int ph_start_mask(struct ph_comm *c, void **handle, const struct ph_ev *ev, int mask);
int ph_start_raw(struct ph_host *h, void *ctx, void **handle, const struct ph_ev *ev);
int ph_stop(struct ph_host *h, void *handle);
int ph_record(struct ph_host *h, void *handle, int state, uint64_t arg);
bool ph_enabled(const struct ph_host *h, uint32_t type);

/* One collective, split at NCCL's thread boundary. */
void ph_coll_app(struct ph_comm *c, struct ph_coll *k);
void ph_coll_proxy(struct ph_comm *c, struct ph_coll *k);
/* Both, then a ProxyCtrl idle/active pair as the proxy thread does between ops. */
void ph_coll_run(struct ph_comm *c, struct ph_coll *k);

uint64_t ph_now_ns(void);
const char *ph_func_name(int coll_type);
const char *ph_algo_name(int algo);
const char *ph_proto_name(int proto);

#endif

/* Our own declarations of NCCL's profiler plugin ABI, versions 1..7, written from the
 * facts in /work/shared/ref/nccl-plugin-abi.md §4 and nccl-2.31-and-ecosystem.md §1.3 (no
 * NCCL header is included or copied).
 * Layouts must match NCCL's exactly: NCCL calls these tables with its own structs.
 *
 * Exported symbol names: ncclProfiler_v1 .. ncclProfiler_v6 (no "Plugin" in the name).
 * NCCL 2.27 binds v4, 2.28 binds v5, 2.29/2.30 bind v6, 2.31 binds v7; older versions go
 * through shims.
 */
#ifndef NCCLBPF_PLUGIN_NCCL_PROFILER_ABI_H
#define NCCLBPF_PLUGIN_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef int nb_nccl_result_t; /* ncclResult_t: 0 = ncclSuccess */
#define NB_NCCL_SUCCESS 0

typedef void (*nb_nccl_logger_t)(int level, unsigned long flags, const char *file, int line,
				 const char *fmt, ...);

/* ---- event-type bits (§4.2) ---- */
#define NB_PROF_GROUP (1u << 0)
#define NB_PROF_COLL (1u << 1)
#define NB_PROF_P2P (1u << 2)
#define NB_PROF_PROXY_OP (1u << 3)
#define NB_PROF_PROXY_STEP (1u << 4)
#define NB_PROF_PROXY_CTRL (1u << 5)
#define NB_PROF_KERNEL_CH (1u << 6)   /* v3+ */
#define NB_PROF_NET_PLUGIN (1u << 7)  /* v3+ */
#define NB_PROF_GROUP_API (1u << 8)   /* v5+ */
#define NB_PROF_COLL_API (1u << 9)    /* v5+ */
#define NB_PROF_P2P_API (1u << 10)    /* v5+ */
#define NB_PROF_KERNEL_LAUNCH (1u << 11) /* v5+ */
#define NB_PROF_CE_COLL (1u << 12)    /* v6 */
#define NB_PROF_CE_SYNC (1u << 13)    /* v6 */
#define NB_PROF_CE_BATCH (1u << 14)   /* v6 */

#define NB_PROF_ALL_V1 0x3fu
#define NB_PROF_ALL_V3 0xffu
#define NB_PROF_ALL_V5 0xfffu
#define NB_PROF_ALL_V6 0x7fffu
#define NB_PROF_KERNEL_PHASE (1u << 15) /* v7: kernel barrier phases (NCCL forces KernelCh) */
#define NB_PROF_ALL_V7 0xffffu

/* ---- states (§4.4): one enum shared by all versions ---- */
enum nb_prof_state {
	NB_PROF_ST_PROXY_OP_SEND_POSTED = 0,
	NB_PROF_ST_PROXY_OP_SEND_REM_FIFO_WAIT = 1,
	NB_PROF_ST_PROXY_OP_SEND_TRANSMITTED = 2,
	NB_PROF_ST_PROXY_OP_SEND_DONE = 3,
	NB_PROF_ST_PROXY_OP_RECV_POSTED = 4,
	NB_PROF_ST_PROXY_OP_RECV_RECEIVED = 5,
	NB_PROF_ST_PROXY_OP_RECV_TRANSMITTED = 6,
	NB_PROF_ST_PROXY_OP_RECV_DONE = 7,
	NB_PROF_ST_PROXY_STEP_SEND_GPU_WAIT = 8,
	NB_PROF_ST_PROXY_STEP_SEND_WAIT = 9,
	NB_PROF_ST_PROXY_STEP_RECV_WAIT = 10,
	NB_PROF_ST_PROXY_STEP_RECV_FLUSH_WAIT = 11,
	NB_PROF_ST_PROXY_STEP_RECV_GPU_WAIT = 12,
	NB_PROF_ST_PROXY_CTRL_IDLE = 13,
	NB_PROF_ST_PROXY_CTRL_ACTIVE = 14,
	NB_PROF_ST_PROXY_CTRL_SLEEP = 15,
	NB_PROF_ST_PROXY_CTRL_WAKEUP = 16,
	NB_PROF_ST_PROXY_CTRL_APPEND = 17,
	NB_PROF_ST_PROXY_CTRL_APPEND_END = 18,
	NB_PROF_ST_PROXY_OP_IN_PROGRESS_V4 = 19,
	NB_PROF_ST_PROXY_STEP_SEND_PEER_WAIT_V4 = 20,
	NB_PROF_ST_NET_PLUGIN_UPDATE = 21,
	NB_PROF_ST_KERNEL_CH_STOP = 22,
	NB_PROF_ST_GROUP_START_API_STOP = 23,
	NB_PROF_ST_GROUP_END_API_START = 24,
	NB_PROF_ST_CE_COLL_START = 25,
	NB_PROF_ST_CE_COLL_COMPLETE = 26,
	NB_PROF_ST_CE_SYNC_START = 27,
	NB_PROF_ST_CE_SYNC_COMPLETE = 28,
	NB_PROF_ST_CE_BATCH_START = 29,
	NB_PROF_ST_CE_BATCH_COMPLETE = 30,
	NB_PROF_ST_KERNEL_PHASE_STOP = 31, /* v7: stop time in the kernelCh member of the args */
};
/* NCCL passes the state as a C enum: int-sized. */
typedef int nb_prof_state_t;

/* ---- descriptor members shared by several versions ---- */
struct nb_prof_proxy_op_d {
	pid_t pid; /* originator: with PXN another process */
	uint8_t channelId;
	int peer;
	int nSteps;
	int chunkSize;
	int isSend;
};
struct nb_prof_proxy_step_d {
	int step;
};
struct nb_prof_kernel_ch_d { /* v4+: with GPU start timestamp */
	uint8_t channelId;
	uint64_t pTimer;
};
struct nb_prof_kernel_ch_v3_d {
	uint8_t channelId;
};
struct nb_prof_net_plugin_d {
	int64_t id;
	void *data;
};

/* ---- v1 ---- */
struct nb_prof_descr_v1 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			uint8_t func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			uint8_t datatype;
			uint32_t op;
			size_t trafficBytes;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			uint8_t algo;
			uint8_t proto;
			int isCollnet;
			int isNvls;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			uint8_t func;
			void *buff;
			uint8_t datatype;
			size_t count;
			int peer;
		} p2p;
		struct nb_prof_proxy_op_d proxyOp;
		struct nb_prof_proxy_step_d proxyStep;
	};
};

/* v1..v3 state arguments */
union nb_prof_state_args_v1 {
	struct {
		size_t transSize;
		int steps;
	} proxyOp;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
};

/* ---- v2 ---- */
struct nb_prof_descr_v2 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			size_t trafficBytes;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
		struct nb_prof_proxy_op_d proxyOp;
		struct nb_prof_proxy_step_d proxyStep;
	};
};

/* ---- v3 ---- */
struct nb_prof_descr_v3 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			const char *name;
			uint64_t commHash;
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nMaxChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *name;
			uint64_t commHash;
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
		} p2p;
		struct nb_prof_proxy_op_d proxyOp;
		struct nb_prof_proxy_step_d proxyStep;
		struct nb_prof_kernel_ch_v3_d kernelCh;
		struct nb_prof_net_plugin_d netPlugin;
	};
};

/* ---- v4 ---- */
struct nb_prof_descr_v4 {
	uint8_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;
			const char *proto;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
		} p2p;
		struct nb_prof_proxy_op_d proxyOp;
		struct nb_prof_proxy_step_d proxyStep;
		struct nb_prof_kernel_ch_d kernelCh;
		struct nb_prof_net_plugin_d netPlugin;
	};
};

/* v4..v6 state arguments */
union nb_prof_state_args_v4 {
	struct {
		size_t transSize;
	} proxyStep;
	struct {
		int appendedProxyOps;
	} proxyCtrl;
	struct {
		void *data;
	} netPlugin;
	struct {
		uint64_t pTimer;
	} kernelCh;
};

/* ---- v5 members (v6 = v5 + CE members appended to the union) ---- */
#define NB_PROF_V5_UNION_MEMBERS                                                      \
	struct {                                                                      \
		bool graphCaptured;                                                   \
		int groupDepth;                                                       \
	} groupApi;                                                                   \
	struct {                                                                      \
		const char *func;                                                     \
		size_t count;                                                         \
		const char *datatype;                                                 \
		int root;                                                             \
		void *stream;                                                         \
		bool graphCaptured;                                                   \
	} collApi;                                                                    \
	struct {                                                                      \
		const char *func;                                                     \
		size_t count;                                                         \
		const char *datatype;                                                 \
		void *stream;                                                         \
		bool graphCaptured;                                                   \
	} p2pApi;                                                                     \
	struct {                                                                      \
		void *stream;                                                         \
	} kernelLaunch;                                                               \
	struct {                                                                      \
		uint64_t seqNumber;                                                   \
		const char *func;                                                     \
		const void *sendBuff;                                                 \
		void *recvBuff;                                                       \
		size_t count;                                                         \
		int root;                                                             \
		const char *datatype;                                                 \
		uint8_t nChannels;                                                    \
		uint8_t nWarps;                                                       \
		const char *algo;                                                     \
		const char *proto;                                                    \
		void *parentGroup;                                                    \
	} coll;                                                                       \
	struct {                                                                      \
		const char *func;                                                     \
		void *buff;                                                           \
		const char *datatype;                                                 \
		size_t count;                                                         \
		int peer;                                                             \
		uint8_t nChannels;                                                    \
		void *parentGroup;                                                    \
	} p2p;                                                                        \
	struct nb_prof_proxy_op_d proxyOp;                                            \
	struct nb_prof_proxy_step_d proxyStep;                                        \
	struct nb_prof_kernel_ch_d kernelCh;                                          \
	struct nb_prof_net_plugin_d netPlugin;

struct nb_prof_descr_v5 {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		NB_PROF_V5_UNION_MEMBERS
	};
};

struct nb_prof_descr_v6 {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		NB_PROF_V5_UNION_MEMBERS
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			const char *syncStrategy; /* "MC" or "UC" */
			bool intraBatchSync;
			uint32_t batchSize;
			uint32_t numBatches;
			uint32_t ceSeqNum;
			void *stream;
		} ceColl;
		struct {
			bool isComplete;
			int nRanks;
		} ceCollSync;
		struct {
			int numOps;
			size_t totalBytes;
			bool useIntraSync;
		} ceCollBatch;
	};
};

/* ---- v7 (NCCL 2.31): v6 with userTag appended to collApi, p2pApi, coll, p2p, ceColl,
 * coll gaining kernelVariant + isSymColl, and a kernelPhase member. Every v6 member keeps
 * its offsets (asserted in profiler_v7.c); the state-args union is v4's. ---- */
struct nb_prof_descr_v7 {
	uint64_t type;
	void *parentObj;
	int rank;
	union {
		struct {
			bool graphCaptured;
			int groupDepth;
		} groupApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			int root;
			void *stream;
			bool graphCaptured;
			uint64_t userTag; /* 0 = untagged */
		} collApi;
		struct {
			const char *func;
			size_t count;
			const char *datatype;
			void *stream;
			bool graphCaptured;
			uint64_t userTag;
		} p2pApi;
		struct {
			void *stream;
		} kernelLaunch;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			uint8_t nChannels;
			uint8_t nWarps;
			const char *algo;   /* symmetric kernels: the variant suffix */
			const char *proto;  /* symmetric kernels: "" */
			void *parentGroup;
			const char *kernelVariant;
			bool isSymColl;
			uint64_t userTag;
		} coll;
		struct {
			const char *func;
			void *buff;
			const char *datatype;
			size_t count;
			int peer;
			uint8_t nChannels;
			void *parentGroup;
			uint64_t userTag;
		} p2p;
		struct nb_prof_proxy_op_d proxyOp;
		struct nb_prof_proxy_step_d proxyStep;
		struct nb_prof_kernel_ch_d kernelCh;
		struct nb_prof_net_plugin_d netPlugin;
		struct {
			uint64_t seqNumber;
			const char *func;
			const void *sendBuff;
			void *recvBuff;
			size_t count;
			int root;
			const char *datatype;
			const char *syncStrategy;
			bool intraBatchSync;
			uint32_t batchSize;
			uint32_t numBatches;
			uint32_t ceSeqNum;
			void *stream;
			uint64_t userTag;
		} ceColl;
		struct {
			bool isComplete;
			int nRanks;
		} ceCollSync;
		struct {
			int numOps;
			size_t totalBytes;
			bool useIntraSync;
		} ceCollBatch;
		struct {
			uint8_t channelId;
			uint8_t phaseId; /* 0 initial sync, 1 compute, 2 final sync */
			const char *phaseName;
			uint64_t pTimer; /* GPU globaltimer at the phase start */
		} kernelPhase;
	};
};

/* ---- function tables ---- */
#define NB_PROF_TABLE(ver, descr_t, args_t, ...)                                      \
	struct nb_profiler_v##ver {                                                   \
		const char *name;                                                     \
		nb_nccl_result_t (*init)(__VA_ARGS__);                                \
		nb_nccl_result_t (*startEvent)(void *context, void **eHandle, descr_t *eDescr); \
		nb_nccl_result_t (*stopEvent)(void *eHandle);                         \
		nb_nccl_result_t (*recordEventState)(void *eHandle, nb_prof_state_t eState, \
						     args_t *eStateArgs);             \
		nb_nccl_result_t (*finalize)(void *context);                          \
	}

NB_PROF_TABLE(1, struct nb_prof_descr_v1, union nb_prof_state_args_v1, void **context,
	      int *eActivationMask);
NB_PROF_TABLE(2, struct nb_prof_descr_v2, union nb_prof_state_args_v1, void **context,
	      int *eActivationMask);
NB_PROF_TABLE(3, struct nb_prof_descr_v3, union nb_prof_state_args_v1, void **context,
	      int *eActivationMask);
NB_PROF_TABLE(4, struct nb_prof_descr_v4, union nb_prof_state_args_v4, void **context,
	      int *eActivationMask, const char *commName, uint64_t commHash, int nNodes,
	      int nranks, int rank, nb_nccl_logger_t logfn);
NB_PROF_TABLE(5, struct nb_prof_descr_v5, union nb_prof_state_args_v4, void **context,
	      uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
	      int nranks, int rank, nb_nccl_logger_t logfn);
NB_PROF_TABLE(6, struct nb_prof_descr_v6, union nb_prof_state_args_v4, void **context,
	      uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
	      int nranks, int rank, nb_nccl_logger_t logfn);
NB_PROF_TABLE(7, struct nb_prof_descr_v7, union nb_prof_state_args_v4, void **context,
	      uint64_t commId, int *eActivationMask, const char *commName, int nNodes,
	      int nranks, int rank, nb_nccl_logger_t logfn);

#endif

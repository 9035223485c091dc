/* Our own declarations of NCCL's net plugin ABI (ncclNetPlugin_v10, _v11, _v12), written
 * from the facts in ref/nccl-plugin-abi.md §5 (no NCCL header is included or copied).
 * Enums are passed as int (same size and calling convention as NCCL's C enums).
 *
 *   release      symbols NCCL looks up, highest first
 *   2.27         ncclNetPlugin_v10 .. _v6
 *   2.28, 2.29   ncclNetPlugin_v11 .. _v6
 *   2.30, 2.31   ncclNetPlugin_v12 .. _v6
 *
 * The same tables are used in the other direction by wrap mode (NCCLBPF_NET_INNER): an inner
 * plugin exporting any of the three is driven through them.
 */
#ifndef NCCLBPF_PLUGIN_NCCL_NET_ABI_H
#define NCCLBPF_PLUGIN_NCCL_NET_ABI_H

#include <stddef.h>
#include <stdint.h>

/* ncclResult_t */
#define NB_NET_SUCCESS 0
#define NB_NET_SYSTEM_ERROR 2
#define NB_NET_INTERNAL_ERROR 3
#define NB_NET_INVALID_ARGUMENT 4
#define NB_NET_INVALID_USAGE 5
#define NB_NET_REMOTE_ERROR 6

#define NB_NET_HANDLE_MAXSIZE 128
#define NB_NET_MAX_REQUESTS 32
#define NB_NET_PTR_HOST 0x1
#define NB_NET_PTR_CUDA 0x2
#define NB_NET_PTR_DMABUF 0x4
#define NB_NET_DEVICE_HOST 0
#define NB_NET_MAX_SIZE_BYTES (1ull << 40) /* NCCL_MAX_NET_SIZE_BYTES: 1 TiB */

typedef void (*nb_net_logger_t)(int level, unsigned long flags, const char *file, int line,
				const char *fmt, ...);
/* ncclProfilerCallback_t: (eHandle**, type, pHandle, pluginId, extData) */
typedef int (*nb_net_prof_cb_t)(void **ehandle, int type, void *phandle, int64_t plugin_id,
				void *ext);

struct nb_net_vprops_v10 { int ndevs; int devs[4]; };  /* v10, v11 */
struct nb_net_vprops_v12 { int ndevs; int devs[8]; };

#define NB_NET_PROPS_COMMON(VPROPS)                                                        \
	char *name;                                                                        \
	char *pci_path;                                                                    \
	uint64_t guid;                                                                     \
	int ptr_support;                                                                   \
	int reg_is_global;                                                                 \
	int force_flush;                                                                   \
	int speed; /* Mbps */                                                              \
	int port;                                                                          \
	float latency; /* us */                                                            \
	int max_comms;                                                                     \
	int max_recvs;                                                                     \
	int net_device_type;                                                               \
	int net_device_version;                                                            \
	VPROPS vprops;                                                                     \
	size_t max_p2p_bytes;                                                              \
	size_t max_coll_bytes;

struct nb_net_props_v10 { NB_NET_PROPS_COMMON(struct nb_net_vprops_v10) };
struct nb_net_props_v11 {
	NB_NET_PROPS_COMMON(struct nb_net_vprops_v10)
	int max_multi_request_size;
};
struct nb_net_props_v12 {
	NB_NET_PROPS_COMMON(struct nb_net_vprops_v12)
	int max_multi_request_size;
	int16_t rail_id;
	int16_t plane_id;
};

/* ncclNetDeviceHandle_v10/v11 (v12 is v11) */
struct nb_net_device_handle {
	int net_device_type;
	int net_device_version;
	void *handle;
	size_t size;
	int needs_proxy_progress;
};

/* ncclNetCommConfig_v10/v11: trafficClass, -1 = undefined */
struct nb_net_comm_config { int traffic_class; };

/* ncclNetAttr_v11 (= v12) */
struct nb_net_comm_attr {
	int32_t max_concurrent_peers, min_concurrent_peers, max_flows_per_peer,
		min_flows_per_peer;
};
struct nb_net_attr {
	struct nb_net_comm_attr send_comm_attr, recv_comm_attr;
	uint32_t op, algo, proto;
};

/* Members from regMr on are the same in v10, v11 and v12 (apart from the vprops type of
 * makeVDevice). */
#define NB_NET_DATA_MEMBERS(VPROPS)                                                        \
	int (*reg_mr)(void *comm, void *data, size_t size, int type, void **mh);           \
	int (*reg_mr_dma_buf)(void *comm, void *data, size_t size, int type,               \
			      uint64_t offset, int fd, void **mh);                         \
	int (*dereg_mr)(void *comm, void *mh);                                             \
	int (*isend)(void *send_comm, void *data, size_t size, int tag, void *mh,          \
		     void *phandle, void **req);                                           \
	int (*irecv)(void *recv_comm, int n, void **data, size_t *sizes, int *tags,        \
		     void **mhs, void **phandles, void **req);                             \
	int (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhs,         \
		      void **req);                                                         \
	int (*test)(void *req, int *done, int *sizes);                                     \
	int (*close_send)(void *send_comm);                                                \
	int (*close_recv)(void *recv_comm);                                                \
	int (*close_listen)(void *listen_comm);                                            \
	int (*get_device_mr)(void *comm, void *mh, void **dptr_mh);                        \
	int (*irecv_consumed)(void *recv_comm, int n, void *req);                          \
	int (*make_vdevice)(int *d, VPROPS *props);

struct nb_net_v10 {
	const char *name;
	int (*init)(nb_net_logger_t log, nb_net_prof_cb_t prof);
	int (*devices)(int *ndev);
	int (*get_properties)(int dev, struct nb_net_props_v10 *props);
	int (*listen)(int dev, void *handle, void **listen_comm);
	int (*connect)(int dev, struct nb_net_comm_config *cfg, void *handle, void **send_comm,
		       struct nb_net_device_handle **send_dev_comm);
	int (*accept)(void *listen_comm, void **recv_comm,
		      struct nb_net_device_handle **recv_dev_comm);
	NB_NET_DATA_MEMBERS(struct nb_net_vprops_v10)
};

#define NB_NET_V11_MEMBERS(PROPS, VPROPS)                                                  \
	const char *name;                                                                  \
	int (*init)(void **ctx, uint64_t comm_id, struct nb_net_comm_config *cfg,          \
		    nb_net_logger_t log, nb_net_prof_cb_t prof);                           \
	int (*devices)(int *ndev);                                                         \
	int (*get_properties)(int dev, PROPS *props);                                      \
	int (*listen)(void *ctx, int dev, void *handle, void **listen_comm);               \
	int (*connect)(void *ctx, int dev, void *handle, void **send_comm,                 \
		       struct nb_net_device_handle **send_dev_comm);                       \
	int (*accept)(void *listen_comm, void **recv_comm,                                 \
		      struct nb_net_device_handle **recv_dev_comm);                        \
	NB_NET_DATA_MEMBERS(VPROPS)                                                        \
	int (*finalize)(void *ctx);                                                        \
	int (*set_net_attr)(void *ctx, struct nb_net_attr *attr);

struct nb_net_v11 { NB_NET_V11_MEMBERS(struct nb_net_props_v11, struct nb_net_vprops_v10) };
struct nb_net_v12 { NB_NET_V11_MEMBERS(struct nb_net_props_v12, struct nb_net_vprops_v12) };

/* x86-64 layouts (checked against the field tables of ref/nccl-plugin-abi.md §5.2). */
_Static_assert(sizeof(struct nb_net_props_v10) == 104, "ncclNetProperties_v10_t");
_Static_assert(sizeof(struct nb_net_props_v11) == 112, "ncclNetProperties_v11_t");
_Static_assert(sizeof(struct nb_net_props_v12) == 128, "ncclNetProperties_v12_t");
_Static_assert(offsetof(struct nb_net_props_v12, max_p2p_bytes) == 104, "v12 vprops[8]");
_Static_assert(sizeof(struct nb_net_v10) == 20 * sizeof(void *), "ncclNet_v10_t");
_Static_assert(sizeof(struct nb_net_v11) == 22 * sizeof(void *), "ncclNet_v11_t");
_Static_assert(sizeof(struct nb_net_v12) == 22 * sizeof(void *), "ncclNet_v12_t");
_Static_assert(sizeof(struct nb_net_device_handle) == 32, "ncclNetDeviceHandle_v10_t");
_Static_assert(sizeof(struct nb_net_attr) == 44, "ncclNetAttr_v11_t");

#endif

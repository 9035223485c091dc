/* The net plugin's version-independent layer. ncclNetPlugin_v10/_v11/_v12 (net_exports.c)
 * convert their arguments and call these functions, which have v12 semantics. Below them is
 * a backend with the v12 function table: the own TCP transport (net_backend_tcp.c) or an
 * inner net plugin loaded from NCCLBPF_NET_INNER (net_inner.c). This layer adds what both
 * share: per-communicator contexts, comm / request / registration wrappers (so hooks see
 * connection ids, durations and sizes, and so registration misuse is caught before it
 * reaches the backend), and the SEC("net") hooks (net_hooks.c).
 */
#ifndef NCCLBPF_PLUGIN_NET_PLUGIN_H
#define NCCLBPF_PLUGIN_NET_PLUGIN_H

#include <stdbool.h>
#include <stdint.h>

#include "plugin/net/nccl_net_abi.h"
#include "plugin/net/net_tcp.h"
#ifndef NCCLBPF_NET_STANDALONE
#include <stdatomic.h>

#include "runtime/runtime.h"
#endif

struct net_backend {
	const struct nb_net_v12 *ops; /* v12 semantics; optional members may be NULL */
	bool is_tcp;
	int inner_version;           /* 10, 11, 12; 0 for tcp */
	char path[512];              /* inner library */
	int reg_is_global;           /* from getProperties(0) */
};

/* The backend of this process, chosen at the first init (NCCLBPF_NET_INNER), or NULL when
 * the inner plugin named there cannot be used. */
const struct net_backend *net_backend(void);
extern const struct nb_net_v12 net_tcp_ops;
/* Loads an inner net plugin (highest of v12, v11, v10). 0 or negative errno with err. */
int net_inner_load(const char *path, struct net_backend *out, nb_net_logger_t log,
		   nb_net_prof_cb_t prof, char *err, size_t errlen);

/* ---- version-independent entry points (v12 semantics) ---- */
int netp_init(void **ctx, uint64_t comm_id, const struct nb_net_comm_config *cfg,
	      nb_net_logger_t log, nb_net_prof_cb_t prof, int abi_version);
int netp_finalize(void *ctx);
int netp_devices(int *ndev);
int netp_get_properties(int dev, struct nb_net_props_v12 *props);
int netp_listen(void *ctx, int dev, void *handle, void **listen_comm);
int netp_connect(void *ctx, int dev, void *handle, void **send_comm,
		 struct nb_net_device_handle **dev_comm);
int netp_accept(void *listen_comm, void **recv_comm, struct nb_net_device_handle **dev_comm);
int netp_reg_mr(void *comm, void *data, size_t size, int type, void **mh);
int netp_reg_mr_dma_buf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			void **mh);
int netp_dereg_mr(void *comm, void *mh);
int netp_isend(void *send_comm, void *data, size_t size, int tag, void *mh, void *phandle,
	       void **req);
int netp_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhs,
	       void **phandles, void **req);
int netp_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhs, void **req);
int netp_test(void *req, int *done, int *sizes);
int netp_close_send(void *send_comm);
int netp_close_recv(void *recv_comm);
int netp_close_listen(void *listen_comm);
int netp_get_device_mr(void *comm, void *mh, void **dptr_mh);
int netp_irecv_consumed(void *recv_comm, int n, void *req);
int netp_make_vdevice(int *d, struct nb_net_vprops_v12 *props);
int netp_set_net_attr(void *ctx, struct nb_net_attr *attr);

/* Property conversions between versions (vprops beyond 4 entries are dropped for v10/v11). */
void net_props_to_v10(const struct nb_net_props_v12 *in, struct nb_net_props_v10 *out);
void net_props_to_v11(const struct nb_net_props_v12 *in, struct nb_net_props_v11 *out);
void net_props_from_v10(const struct nb_net_props_v10 *in, struct nb_net_props_v12 *out);
void net_props_from_v11(const struct nb_net_props_v11 *in, struct nb_net_props_v12 *out);

/* ---- hooks (net_hooks.c) ---- */
enum net_hook_op {
	NET_OP_ISEND = 0,
	NET_OP_IRECV = 1,
	NET_OP_SEND_DONE = 2,
	NET_OP_RECV_DONE = 3,
	NET_OP_CONNECT = 4,
	NET_OP_ACCEPT = 5,
	NET_OP_CLOSE = 6,
};
struct net_hook_args {
	uint64_t comm_id, conn_id, bytes, duration_ns;
	uint32_t op, dev, n_recv, abi_version, mode;
	int32_t tag;
	uint32_t n_sockets, n_threads; /* in/out at NET_OP_CONNECT */
	uint64_t now_ns;               /* 0: read the clock */
};
/* True when SEC("net") programs are attached (then callers take timestamps). Inline: the
 * data path calls it on every isend/irecv; without programs it is one load. */
#ifdef NCCLBPF_NET_STANDALONE
static inline bool net_hooks_active(void)
{
	return false;
}
#else
static inline bool net_hooks_active(void)
{
	return atomic_load_explicit(&runtime_hook_slots[NB_HOOK_NET], memory_order_relaxed) != NULL;
}
#endif
/* Runs the chain; returns 0, or the number of programs that faulted. */
int net_hooks_run(struct net_hook_args *a);
uint64_t net_now_ns(void);
/* Loads NCCLBPF_POLICY (once per process) and sets the logger. */
void net_hooks_init(nb_net_logger_t log);

/* Counters for tests and `ncclbpf` diagnostics. */
struct net_stats {
	uint64_t comms_open, mrs_live, reqs_live;
};
void net_stats_get(struct net_stats *out);

#endif

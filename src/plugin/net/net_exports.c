/* ncclNetPlugin_v10, _v11, _v12: NCCL 2.27 binds v10, 2.28/2.29 v11, 2.30/2.31 v12.
 *
 * The optional members (regMrDmaBuf, getDeviceMr, irecvConsumed, makeVDevice, setNetAttr)
 * must be NULL unless the backend has them: NCCL checks them for NULL to decide whether to
 * use a feature (a non-NULL makeVDevice invites NIC fusion, for instance). They are filled
 * in by the first successful init, under a lock, before NCCL reads them (NCCL looks at them
 * only after init); the tables are therefore not const.
 *
 * 2.28+ call init for every communicator and dlclose the library when the last one ends;
 * the library is linked -z nodelete, all threads belong to connections (joined at close)
 * and the backend choice survives, so a re-dlopen finds consistent state. */
#include <pthread.h>
#include <string.h>

#include "plugin/net/net_plugin.h"

#ifdef NCCLBPF_NET_STANDALONE
#define NET_NAME "ncclbpf-tcp"
#else
#define NET_NAME "ncclbpf"
#endif
#define EXPORT __attribute__((visibility("default")))

EXPORT struct nb_net_v10 ncclNetPlugin_v10;
EXPORT struct nb_net_v11 ncclNetPlugin_v11;
EXPORT struct nb_net_v12 ncclNetPlugin_v12;

static pthread_mutex_t optional_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---- v12 (native) ---- */
static int v12_init(void **ctx, uint64_t comm_id, struct nb_net_comm_config *cfg,
		    nb_net_logger_t log, nb_net_prof_cb_t prof);

static int v12_get_properties(int dev, struct nb_net_props_v12 *p)
{
	return netp_get_properties(dev, p);
}

/* ---- v11 ---- */
static int v11_get_properties(int dev, struct nb_net_props_v11 *p)
{
	struct nb_net_props_v12 q;
	if (!p)
		return NB_NET_INVALID_ARGUMENT;
	int rc = netp_get_properties(dev, &q);
	if (rc == NB_NET_SUCCESS)
		net_props_to_v11(&q, p);
	return rc;
}

static int v11_make_vdevice(int *d, struct nb_net_vprops_v10 *p)
{
	struct nb_net_vprops_v12 q;
	if (!p || p->ndevs < 0 || p->ndevs > 4)
		return NB_NET_INVALID_ARGUMENT;
	memset(&q, 0, sizeof(q));
	q.ndevs = p->ndevs;
	memcpy(q.devs, p->devs, sizeof(int) * (size_t)p->ndevs);
	return netp_make_vdevice(d, &q);
}

static int v11_init(void **ctx, uint64_t comm_id, struct nb_net_comm_config *cfg,
		    nb_net_logger_t log, nb_net_prof_cb_t prof);

/* ---- v10: one process context (NCCL 2.27 calls init once, never finalize) ---- */
static void *v10_ctx;

static int v10_init(nb_net_logger_t log, nb_net_prof_cb_t prof);

static int v10_get_properties(int dev, struct nb_net_props_v10 *p)
{
	struct nb_net_props_v12 q;
	if (!p)
		return NB_NET_INVALID_ARGUMENT;
	int rc = netp_get_properties(dev, &q);
	if (rc == NB_NET_SUCCESS)
		net_props_to_v10(&q, p);
	return rc;
}

static int v10_listen(int dev, void *handle, void **lc)
{
	return netp_listen(v10_ctx, dev, handle, lc);
}

static int v10_connect(int dev, struct nb_net_comm_config *cfg, void *handle, void **sc,
		       struct nb_net_device_handle **dh)
{
	(void)cfg; /* the traffic class is the backend's business; tcp has none */
	return netp_connect(v10_ctx, dev, handle, sc, dh);
}

/* Fills the optional members the backend supports (see the top comment). */
static void publish_optional(void)
{
	const struct net_backend *b = net_backend();
	if (!b)
		return;
	pthread_mutex_lock(&optional_lock);
	const struct nb_net_v12 *o = b->ops;
	ncclNetPlugin_v12.reg_mr_dma_buf = o->reg_mr_dma_buf ? netp_reg_mr_dma_buf : NULL;
	ncclNetPlugin_v12.get_device_mr = o->get_device_mr ? netp_get_device_mr : NULL;
	ncclNetPlugin_v12.irecv_consumed = o->irecv_consumed ? netp_irecv_consumed : NULL;
	ncclNetPlugin_v12.make_vdevice = o->make_vdevice ? netp_make_vdevice : NULL;
	ncclNetPlugin_v12.set_net_attr = o->set_net_attr ? netp_set_net_attr : NULL;
	ncclNetPlugin_v11.reg_mr_dma_buf = ncclNetPlugin_v12.reg_mr_dma_buf;
	ncclNetPlugin_v11.get_device_mr = ncclNetPlugin_v12.get_device_mr;
	ncclNetPlugin_v11.irecv_consumed = ncclNetPlugin_v12.irecv_consumed;
	ncclNetPlugin_v11.make_vdevice = o->make_vdevice ? v11_make_vdevice : NULL;
	ncclNetPlugin_v11.set_net_attr = ncclNetPlugin_v12.set_net_attr;
	ncclNetPlugin_v10.reg_mr_dma_buf = ncclNetPlugin_v12.reg_mr_dma_buf;
	ncclNetPlugin_v10.get_device_mr = ncclNetPlugin_v12.get_device_mr;
	ncclNetPlugin_v10.irecv_consumed = ncclNetPlugin_v12.irecv_consumed;
	ncclNetPlugin_v10.make_vdevice = ncclNetPlugin_v11.make_vdevice;
	pthread_mutex_unlock(&optional_lock);
}

static int v12_init(void **ctx, uint64_t comm_id, struct nb_net_comm_config *cfg,
		    nb_net_logger_t log, nb_net_prof_cb_t prof)
{
	int rc = netp_init(ctx, comm_id, cfg, log, prof, 12);
	if (rc == NB_NET_SUCCESS)
		publish_optional();
	return rc;
}

static int v11_init(void **ctx, uint64_t comm_id, struct nb_net_comm_config *cfg,
		    nb_net_logger_t log, nb_net_prof_cb_t prof)
{
	int rc = netp_init(ctx, comm_id, cfg, log, prof, 11);
	if (rc == NB_NET_SUCCESS)
		publish_optional();
	return rc;
}

static int v10_init(nb_net_logger_t log, nb_net_prof_cb_t prof)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	int rc = NB_NET_SUCCESS;
	pthread_mutex_lock(&lock);
	if (!v10_ctx) {
		struct nb_net_comm_config cfg = { -1 };
		rc = netp_init(&v10_ctx, 0, &cfg, log, prof, 10);
	}
	pthread_mutex_unlock(&lock);
	if (rc == NB_NET_SUCCESS)
		publish_optional();
	return rc;
}

#define DATA_MEMBERS                                                                       \
	.reg_mr = netp_reg_mr, .dereg_mr = netp_dereg_mr, .isend = netp_isend,             \
	.irecv = netp_irecv, .iflush = netp_iflush, .test = netp_test,                     \
	.close_send = netp_close_send, .close_recv = netp_close_recv,                      \
	.close_listen = netp_close_listen, .accept = netp_accept, .devices = netp_devices

struct nb_net_v12 ncclNetPlugin_v12 = {
	.name = NET_NAME,
	.init = v12_init,
	.get_properties = v12_get_properties,
	.listen = netp_listen,
	.connect = netp_connect,
	.finalize = netp_finalize,
	DATA_MEMBERS,
};

struct nb_net_v11 ncclNetPlugin_v11 = {
	.name = NET_NAME,
	.init = v11_init,
	.get_properties = v11_get_properties,
	.listen = netp_listen,
	.connect = netp_connect,
	.finalize = netp_finalize,
	DATA_MEMBERS,
};

struct nb_net_v10 ncclNetPlugin_v10 = {
	.name = NET_NAME,
	.init = v10_init,
	.get_properties = v10_get_properties,
	.listen = v10_listen,
	.connect = v10_connect,
	DATA_MEMBERS,
};

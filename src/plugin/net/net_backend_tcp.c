/* The own TCP transport behind the v12-shaped backend table (net_plugin.h). The data path
 * (isend, irecv, test, connect) is called directly by net_plugin.c; the table serves the
 * generic paths. */
#include "plugin/net/net_plugin.h"

static int b_init(void **ctx, uint64_t comm_id, struct nb_net_comm_config *cfg,
		  nb_net_logger_t log, nb_net_prof_cb_t prof)
{
	(void)comm_id;
	(void)cfg;
	(void)log;
	(void)prof;
	*ctx = NULL;
	return tcp_init();
}

static int b_finalize(void *ctx)
{
	(void)ctx;
	return NB_NET_SUCCESS;
}

static int b_listen(void *ctx, int dev, void *handle, void **lc)
{
	(void)ctx;
	return tcp_listen(dev, handle, lc);
}

static int b_connect(void *ctx, int dev, void *handle, void **sc, struct nb_net_device_handle **dh)
{
	(void)ctx;
	(void)dh;
	return tcp_connect(dev, handle, NULL, sc);
}

static int b_accept(void *lc, void **rc, struct nb_net_device_handle **dh)
{
	(void)dh;
	return tcp_accept(lc, rc);
}

static int b_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph, void **req)
{
	(void)mh;
	(void)ph;
	return tcp_isend(sc, data, size, tag, req);
}

static int b_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **ph,
		   void **req)
{
	(void)mhs;
	(void)ph;
	return tcp_irecv(rc, n, data, sizes, tags, req);
}

const struct nb_net_v12 net_tcp_ops = {
	.name = "ncclbpf",
	.init = b_init,
	.devices = tcp_devices,
	.get_properties = tcp_get_properties,
	.listen = b_listen,
	.connect = b_connect,
	.accept = b_accept,
	.reg_mr = tcp_reg_mr,
	.reg_mr_dma_buf = NULL,
	.dereg_mr = tcp_dereg_mr,
	.isend = b_isend,
	.irecv = b_irecv,
	.iflush = NULL,
	.test = tcp_test,
	.close_send = tcp_close_send,
	.close_recv = tcp_close_recv,
	.close_listen = tcp_close_listen,
	.get_device_mr = NULL,
	.irecv_consumed = NULL,
	.make_vdevice = NULL,
	.finalize = b_finalize,
	.set_net_attr = NULL,
};

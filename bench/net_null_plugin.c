/* A net plugin that moves no data: the inner plugin of bench_net_loopback --wrap when the
 * subject is the wrap-mode forwarding layer alone. isend/irecv take a request from a
 * per-comm pool; test reports "not done" for the next null_net_set_polls(n) calls on that
 * request, then done with the posted sizes. No syscall, lock, atomic or allocation on the
 * data path, so (wrapped - direct) time per call is what ncclbpf's layer adds. One thread
 * per comm, as NCCL's proxy does. Exports ncclNetPlugin_v12 and null_net_set_polls. */
#include <stdlib.h>
#include <string.h>

#include "plugin/net/nccl_net_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define POOL NB_NET_MAX_REQUESTS
#define COMM_MAGIC 0x4e554c43u

static int polls_per_req; /* set before requests are posted (single-threaded setup) */

EXPORT void null_net_set_polls(int n)
{
	polls_per_req = n < 0 ? 0 : n;
}

struct null_req {
	struct null_comm *comm;
	int n, left;
	int sizes[8];
};

struct null_comm {
	uint32_t magic;
	int top;
	struct null_req *free_list[POOL];
	struct null_req reqs[POOL];
};

static int n_init(void **ctx, uint64_t comm_id, struct nb_net_comm_config *cfg,
		  nb_net_logger_t log, nb_net_prof_cb_t prof)
{
	static int token;
	(void)comm_id;
	(void)cfg;
	(void)log;
	(void)prof;
	*ctx = &token;
	return NB_NET_SUCCESS;
}

static int n_devices(int *n)
{
	*n = 1;
	return NB_NET_SUCCESS;
}

static int n_props(int dev, struct nb_net_props_v12 *p)
{
	if (dev != 0 || !p)
		return NB_NET_INVALID_ARGUMENT;
	memset(p, 0, sizeof(*p));
	p->name = (char *)"null0";
	p->ptr_support = NB_NET_PTR_HOST;
	p->speed = 100000;
	p->max_comms = 65536;
	p->max_recvs = 8;
	p->vprops.ndevs = 1;
	p->max_p2p_bytes = 1ull << 31;
	p->max_coll_bytes = 1ull << 31;
	p->max_multi_request_size = 1;
	p->rail_id = -1;
	p->plane_id = -1;
	return NB_NET_SUCCESS;
}

static struct null_comm *comm_new(void)
{
	struct null_comm *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->magic = COMM_MAGIC;
	for (int i = 0; i < POOL; i++) {
		c->reqs[i].comm = c;
		c->free_list[i] = &c->reqs[i];
	}
	c->top = POOL;
	return c;
}

static int n_listen(void *ctx, int dev, void *handle, void **lc)
{
	static int token;
	(void)ctx;
	(void)dev;
	memset(handle, 0, NB_NET_HANDLE_MAXSIZE);
	*lc = &token;
	return NB_NET_SUCCESS;
}

static int n_connect(void *ctx, int dev, void *handle, void **sc, struct nb_net_device_handle **dh)
{
	(void)ctx;
	(void)dev;
	(void)handle;
	(void)dh;
	*sc = comm_new();
	return *sc ? NB_NET_SUCCESS : NB_NET_SYSTEM_ERROR;
}

static int n_accept(void *lc, void **rc, struct nb_net_device_handle **dh)
{
	(void)lc;
	(void)dh;
	*rc = comm_new();
	return *rc ? NB_NET_SUCCESS : NB_NET_SYSTEM_ERROR;
}

static int n_reg(void *comm, void *data, size_t size, int type, void **mh)
{
	static int token;
	(void)comm;
	(void)data;
	(void)size;
	(void)type;
	*mh = &token;
	return NB_NET_SUCCESS;
}

static int n_dereg(void *comm, void *mh)
{
	(void)comm;
	(void)mh;
	return NB_NET_SUCCESS;
}

static struct null_req *req_get(void *comm)
{
	struct null_comm *c = comm;
	if (!c || c->magic != COMM_MAGIC || !c->top)
		return NULL;
	struct null_req *r = c->free_list[--c->top];
	r->left = polls_per_req;
	return r;
}

static int n_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph, void **req)
{
	(void)data;
	(void)tag;
	(void)mh;
	(void)ph;
	struct null_req *r = req_get(sc);
	*req = r;
	if (r) {
		r->n = 1;
		r->sizes[0] = (int)size;
	}
	return NB_NET_SUCCESS;
}

static int n_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **ph,
		   void **req)
{
	(void)data;
	(void)tags;
	(void)mhs;
	(void)ph;
	if (n < 1 || n > 8)
		return NB_NET_INVALID_ARGUMENT;
	struct null_req *r = req_get(rc);
	*req = r;
	if (r) {
		r->n = n;
		for (int i = 0; i < n; i++)
			r->sizes[i] = (int)sizes[i];
	}
	return NB_NET_SUCCESS;
}

static int n_test(void *request, int *done, int *sizes)
{
	struct null_req *r = request;
	if (r->left > 0) {
		r->left--;
		*done = 0;
		return NB_NET_SUCCESS;
	}
	*done = 1;
	if (sizes)
		for (int i = 0; i < r->n; i++)
			sizes[i] = r->sizes[i];
	r->comm->free_list[r->comm->top++] = r;
	return NB_NET_SUCCESS;
}

static int n_close(void *comm)
{
	free(comm);
	return NB_NET_SUCCESS;
}

static int n_close_listen(void *lc)
{
	(void)lc;
	return NB_NET_SUCCESS;
}

static int n_finalize(void *ctx)
{
	(void)ctx;
	return NB_NET_SUCCESS;
}

EXPORT const struct nb_net_v12 ncclNetPlugin_v12 = {
	.name = "null",
	.init = n_init,
	.devices = n_devices,
	.get_properties = n_props,
	.listen = n_listen,
	.connect = n_connect,
	.accept = n_accept,
	.reg_mr = n_reg,
	.dereg_mr = n_dereg,
	.isend = n_isend,
	.irecv = n_irecv,
	.test = n_test,
	.close_send = n_close,
	.close_recv = n_close,
	.close_listen = n_close_listen,
	.finalize = n_finalize,
};

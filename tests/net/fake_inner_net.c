/* A fake inner net plugin for wrap-mode tests: an in-process transport (messages are
 * copied through per-connection queues), strict bookkeeping of comms, registrations and
 * requests (misuse is counted, never crashes), and failure injection at any step.
 * Built three times, exporting ncclNetPlugin_v10, _v11 or _v12 (FAKE_NET_VERSION).
 * Control from the test (dlopen the same path, dlsym): fake_net_fail, fake_net_counters. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/net/nccl_net_abi.h"

#define FAIL_CODE NB_NET_SYSTEM_ERROR
#define MAXQ 64

struct fake_counters {
	int comms, listens, mrs, reqs, ctxs;
	int misuse;          /* a call with an object we never handed out / already freed */
	int mrs_at_close;    /* registrations still live when their comm was closed */
	int calls_reg, calls_dereg, calls_dmabuf, calls_devmr, calls_consumed, calls_attr,
	    calls_vdev, calls_iflush, calls_init;
	int irecv_hints;     /* irecv calls that arrived with NCCL_NET_OPTIONAL_RECV_COMPLETION */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct fake_counters cnt;
static char fail_step[32];
static int fail_nth;

__attribute__((visibility("default"))) void fake_net_fail(const char *step, int nth)
{
	pthread_mutex_lock(&lock);
	strncpy(fail_step, step ? step : "", sizeof(fail_step) - 1);
	fail_nth = nth;
	pthread_mutex_unlock(&lock);
}

__attribute__((visibility("default"))) void fake_net_counters(struct fake_counters *out)
{
	pthread_mutex_lock(&lock);
	*out = cnt;
	pthread_mutex_unlock(&lock);
}

static int should_fail(const char *step)
{
	int f = 0;
	if (fail_step[0] && !strcmp(step, fail_step) && --fail_nth == 0) {
		f = 1;
		fail_step[0] = '\0';
	}
	return f;
}
#define FAILPOINT(step)                                                                    \
	do {                                                                               \
		pthread_mutex_lock(&lock);                                                 \
		int f_ = should_fail(step);                                                \
		pthread_mutex_unlock(&lock);                                               \
		if (f_)                                                                    \
			return FAIL_CODE;                                                  \
	} while (0)

struct msg {
	char *data;
	size_t size;
	int tag;
};
struct link {
	int refs;
	struct msg q[MAXQ];
	int head, tail;
};
#define OBJ_COMM 0x434f4d4d
#define OBJ_LISTEN 0x4c49534e
#define OBJ_MR 0x4d524d52
#define OBJ_REQ 0x52455151
struct comm {
	int magic;
	int is_send;
	struct link *link;
	int live_mrs;
};
struct listener {
	int magic;
	uint64_t id;
	struct link *pending[16];
	int n_pending;
};
struct mr {
	int magic;
	struct comm *comm;
};
struct req {
	int magic;
	struct comm *comm;
	int is_send, n, done;
	void *data[8];
	size_t sizes[8];
	int tags[8], got[8], filled[8];
};
struct handle {
	uint32_t magic;
	uint64_t id;
	int stage;
	struct listener *l;
};

/* registry of live objects: misuse must be detected, not crash */
#define MAXOBJ 4096
static void *live[MAXOBJ];

static void obj_add(void *p)
{
	for (int i = 0; i < MAXOBJ; i++)
		if (!live[i]) {
			live[i] = p;
			return;
		}
}
static int obj_has(void *p, int magic)
{
	if (!p)
		return 0;
	for (int i = 0; i < MAXOBJ; i++)
		if (live[i] == p)
			return *(int *)p == magic;
	return 0;
}
static void obj_del(void *p)
{
	for (int i = 0; i < MAXOBJ; i++)
		if (live[i] == p)
			live[i] = NULL;
}
static int misuse(void)
{
	cnt.misuse++;
	pthread_mutex_unlock(&lock);
	return NB_NET_INVALID_ARGUMENT;
}

static int f_devices(int *n)
{
	FAILPOINT("devices");
	*n = 1;
	return 0;
}

static void fill_props(struct nb_net_props_v12 *p)
{
	memset(p, 0, sizeof(*p));
	p->name = (char *)"fake0";
	p->ptr_support = NB_NET_PTR_HOST;
	p->speed = 100000;
	p->max_comms = 1024;
	p->max_recvs = 8;
	p->vprops.ndevs = 1;
	p->max_p2p_bytes = 1ull << 30;
	p->max_coll_bytes = 1ull << 30;
	p->max_multi_request_size = 1;
	p->rail_id = 5;
	p->plane_id = 6;
}

static int f_listen_impl(int dev, void *handle, void **lc)
{
	FAILPOINT("listen");
	(void)dev;
	static uint64_t next_id = 1;
	struct listener *l = calloc(1, sizeof(*l));
	l->magic = OBJ_LISTEN;
	pthread_mutex_lock(&lock);
	l->id = next_id++;
	obj_add(l);
	cnt.listens++;
	pthread_mutex_unlock(&lock);
	struct handle h = { 0xfa4e, l->id, 0, l };
	memset(handle, 0, NB_NET_HANDLE_MAXSIZE);
	memcpy(handle, &h, sizeof(h));
	*lc = l;
	return 0;
}

static int f_connect_impl(void *handle, void **sc)
{
	FAILPOINT("connect");
	struct handle *h = handle;
	*sc = NULL;
	pthread_mutex_lock(&lock);
	if (h->magic != 0xfa4e || !obj_has(h->l, OBJ_LISTEN))
		return misuse();
	if (h->stage++ == 0) { /* first call: "in progress", like a real nonblocking connect */
		pthread_mutex_unlock(&lock);
		return 0;
	}
	struct link *k = calloc(1, sizeof(*k));
	k->refs = 2;
	h->l->pending[h->l->n_pending++] = k;
	struct comm *c = calloc(1, sizeof(*c));
	c->magic = OBJ_COMM;
	c->is_send = 1;
	c->link = k;
	obj_add(c);
	cnt.comms++;
	pthread_mutex_unlock(&lock);
	*sc = c;
	return 0;
}

static int f_accept(void *lc, void **rc, struct nb_net_device_handle **dh)
{
	FAILPOINT("accept");
	(void)dh;
	struct listener *l = lc;
	*rc = NULL;
	pthread_mutex_lock(&lock);
	if (!obj_has(l, OBJ_LISTEN))
		return misuse();
	if (l->n_pending) {
		struct comm *c = calloc(1, sizeof(*c));
		c->magic = OBJ_COMM;
		c->link = l->pending[0];
		memmove(l->pending, l->pending + 1, sizeof(l->pending[0]) * (size_t)--l->n_pending);
		obj_add(c);
		cnt.comms++;
		*rc = c;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

static int f_reg(void *comm, void *data, size_t size, int type, void **mh)
{
	FAILPOINT("regMr");
	(void)data;
	(void)type;
	pthread_mutex_lock(&lock);
	cnt.calls_reg++;
	if (!obj_has(comm, OBJ_COMM) || size == 0)
		return misuse(); /* the wrapper handles size 0 itself */
	struct mr *m = calloc(1, sizeof(*m));
	m->magic = OBJ_MR;
	m->comm = comm;
	((struct comm *)comm)->live_mrs++;
	obj_add(m);
	cnt.mrs++;
	pthread_mutex_unlock(&lock);
	*mh = m;
	return 0;
}

static int f_reg_dmabuf(void *comm, void *data, size_t size, int type, uint64_t off, int fd,
			void **mh)
{
	FAILPOINT("regMrDmaBuf");
	(void)off;
	(void)fd;
	pthread_mutex_lock(&lock);
	cnt.calls_dmabuf++;
	pthread_mutex_unlock(&lock);
	return f_reg(comm, data, size, type, mh);
}

static int f_dereg(void *comm, void *mh)
{
	FAILPOINT("deregMr");
	pthread_mutex_lock(&lock);
	cnt.calls_dereg++;
	struct mr *m = mh;
	if (!obj_has(comm, OBJ_COMM) || !obj_has(m, OBJ_MR) || m->comm != comm)
		return misuse();
	((struct comm *)comm)->live_mrs--;
	obj_del(m);
	free(m);
	cnt.mrs--;
	pthread_mutex_unlock(&lock);
	return 0;
}

/* FAKE_NET_ODD_HANDLES=1: request handles are the pointer + 1 (opaque handles with bit 0
 * set, which the wrapper must not hand to NCCL as its own tagged requests). */
static int odd_handles = -1;
static void *req_handle(struct req *r)
{
	if (odd_handles < 0) {
		const char *e = getenv("FAKE_NET_ODD_HANDLES");
		odd_handles = e && *e == '1';
	}
	return odd_handles ? (void *)((char *)r + 1) : r;
}
static struct req *req_of(void *h)
{
	return odd_handles > 0 && h ? (struct req *)((char *)h - 1) : h;
}

static struct req *req_new(struct comm *c)
{
	struct req *r = calloc(1, sizeof(*r));
	r->magic = OBJ_REQ;
	r->comm = c;
	obj_add(r);
	cnt.reqs++;
	return r;
}

static int mh_ok(struct comm *c, void *mh)
{
	return !mh || (obj_has(mh, OBJ_MR) && ((struct mr *)mh)->comm == c);
}

static int f_isend(void *sc, void *data, size_t size, int tag, void *mh, void *ph, void **req)
{
	FAILPOINT("isend");
	(void)ph;
	struct comm *c = sc;
	*req = NULL;
	pthread_mutex_lock(&lock);
	if (!obj_has(c, OBJ_COMM) || !c->is_send || !mh_ok(c, mh))
		return misuse();
	struct link *k = c->link;
	if (k->tail - k->head == MAXQ) {
		pthread_mutex_unlock(&lock);
		return 0;
	}
	struct msg *m = &k->q[k->tail++ % MAXQ];
	m->data = malloc(size ? size : 1);
	memcpy(m->data, data, size);
	m->size = size;
	m->tag = tag;
	struct req *r = req_new(c);
	r->is_send = 1;
	r->n = 1;
	r->got[0] = (int)size;
	r->done = 1;
	pthread_mutex_unlock(&lock);
	*req = req_handle(r);
	return 0;
}

static int f_irecv(void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs, void **ph,
		   void **req)
{
	FAILPOINT("irecv");
	(void)ph;
	struct comm *c = rc;
	int hint = *req == (void *)1;
	*req = NULL;
	pthread_mutex_lock(&lock);
	cnt.irecv_hints += hint;
	if (!obj_has(c, OBJ_COMM) || c->is_send || n < 1 || n > 8)
		return misuse();
	for (int i = 0; mhs && i < n; i++)
		if (!mh_ok(c, mhs[i]))
			return misuse();
	struct req *r = req_new(c);
	r->n = n;
	for (int i = 0; i < n; i++) {
		r->data[i] = data[i];
		r->sizes[i] = sizes[i];
		r->tags[i] = tags[i];
	}
	pthread_mutex_unlock(&lock);
	*req = req_handle(r);
	return 0;
}

static int f_iflush(void *rc, int n, void **data, int *sizes, void **mhs, void **req)
{
	FAILPOINT("iflush");
	(void)data;
	(void)sizes;
	(void)mhs;
	(void)n;
	pthread_mutex_lock(&lock);
	cnt.calls_iflush++;
	if (!obj_has(rc, OBJ_COMM))
		return misuse();
	struct req *r = req_new(rc);
	r->done = 1;
	r->n = 0;
	pthread_mutex_unlock(&lock);
	*req = req_handle(r);
	return 0;
}

static int f_test(void *request, int *done, int *sizes)
{
	FAILPOINT("test");
	struct req *r = req_of(request);
	pthread_mutex_lock(&lock);
	if (!obj_has(r, OBJ_REQ))
		return misuse();
	if (!r->is_send && !r->done) {
		struct link *k = r->comm->link;
		while (k->head < k->tail) { /* match queued messages to open slots by tag */
			struct msg *m = &k->q[k->head % MAXQ];
			int slot = -1;
			for (int i = 0; i < r->n && slot < 0; i++)
				if (!r->filled[i] && r->tags[i] == m->tag)
					slot = i;
			if (slot < 0)
				break;
			memcpy(r->data[slot], m->data, m->size < r->sizes[slot] ? m->size : r->sizes[slot]);
			r->got[slot] = (int)m->size;
			r->filled[slot] = 1;
			free(m->data);
			k->head++;
		}
		int all = 1;
		for (int i = 0; i < r->n; i++)
			all &= r->filled[i];
		r->done = all;
	}
	*done = r->done;
	if (r->done) {
		for (int i = 0; sizes && i < r->n; i++)
			sizes[i] = r->got[i];
		obj_del(r);
		free(r);
		cnt.reqs--;
	}
	pthread_mutex_unlock(&lock);
	return 0;
}

static int close_comm(void *p, const char *step)
{
	FAILPOINT(step);
	struct comm *c = p;
	pthread_mutex_lock(&lock);
	if (!obj_has(c, OBJ_COMM))
		return misuse();
	cnt.mrs_at_close += c->live_mrs;
	/* requests still open on this comm die with it */
	for (int i = 0; i < MAXOBJ; i++) {
		struct req *r = live[i];
		if (r && r->magic == OBJ_REQ && r->comm == c) {
			live[i] = NULL;
			free(r);
			cnt.reqs--;
		}
	}
	if (--c->link->refs == 0) {
		while (c->link->head < c->link->tail)
			free(c->link->q[c->link->head++ % MAXQ].data);
		free(c->link);
	}
	obj_del(c);
	c->magic = 0;
	free(c);
	cnt.comms--;
	pthread_mutex_unlock(&lock);
	return 0;
}
static int f_close_send(void *c)
{
	return close_comm(c, "closeSend");
}
static int f_close_recv(void *c)
{
	return close_comm(c, "closeRecv");
}
static int f_close_listen(void *p)
{
	FAILPOINT("closeListen");
	struct listener *l = p;
	pthread_mutex_lock(&lock);
	if (!obj_has(l, OBJ_LISTEN))
		return misuse();
	for (int i = 0; i < l->n_pending; i++)
		free(l->pending[i]);
	obj_del(l);
	free(l);
	cnt.listens--;
	pthread_mutex_unlock(&lock);
	return 0;
}
static int f_devmr(void *comm, void *mh, void **dptr)
{
	FAILPOINT("getDeviceMr");
	pthread_mutex_lock(&lock);
	cnt.calls_devmr++;
	if (!obj_has(comm, OBJ_COMM) || !mh_ok(comm, mh))
		return misuse();
	pthread_mutex_unlock(&lock);
	*dptr = mh;
	return 0;
}
static int f_consumed(void *rc, int n, void *req)
{
	FAILPOINT("irecvConsumed");
	(void)n;
	(void)req;
	pthread_mutex_lock(&lock);
	cnt.calls_consumed++;
	if (!obj_has(rc, OBJ_COMM))
		return misuse();
	pthread_mutex_unlock(&lock);
	return 0;
}

#if FAKE_NET_VERSION == 10
static int f_init10(nb_net_logger_t log, nb_net_prof_cb_t prof)
{
	FAILPOINT("init");
	(void)log;
	(void)prof;
	pthread_mutex_lock(&lock);
	cnt.calls_init++;
	pthread_mutex_unlock(&lock);
	return 0;
}
static int f_props10(int dev, struct nb_net_props_v10 *p)
{
	FAILPOINT("getProperties");
	(void)dev;
	struct nb_net_props_v12 q;
	fill_props(&q);
	memcpy(p, &q, offsetof(struct nb_net_props_v10, vprops));
	p->vprops.ndevs = 1;
	p->max_p2p_bytes = q.max_p2p_bytes;
	p->max_coll_bytes = q.max_coll_bytes;
	return 0;
}
static int f_listen10(int dev, void *h, void **lc)
{
	return f_listen_impl(dev, h, lc);
}
static int f_connect10(int dev, struct nb_net_comm_config *cfg, void *h, void **sc,
		       struct nb_net_device_handle **dh)
{
	(void)dev;
	(void)dh;
	if (!cfg) /* v10 plugins get the per-comm config here */
		return NB_NET_INVALID_ARGUMENT;
	return f_connect_impl(h, sc);
}
static int f_vdev10(int *d, struct nb_net_vprops_v10 *p)
{
	FAILPOINT("makeVDevice");
	(void)p;
	pthread_mutex_lock(&lock);
	cnt.calls_vdev++;
	pthread_mutex_unlock(&lock);
	*d = 1;
	return 0;
}
__attribute__((visibility("default"))) const struct nb_net_v10 ncclNetPlugin_v10 = {
	"fake", f_init10, f_devices, f_props10, f_listen10, f_connect10, f_accept, f_reg,
	f_reg_dmabuf, f_dereg, f_isend, f_irecv, f_iflush, f_test, f_close_send, f_close_recv,
	f_close_listen, f_devmr, f_consumed, f_vdev10,
};
#else
static int f_init(void **ctx, uint64_t id, struct nb_net_comm_config *cfg, nb_net_logger_t log,
		  nb_net_prof_cb_t prof)
{
	FAILPOINT("init");
	(void)id;
	(void)cfg;
	(void)log;
	(void)prof;
	int *c = malloc(sizeof(int));
	*c = 0x43545821;
	pthread_mutex_lock(&lock);
	obj_add(c);
	cnt.ctxs++;
	cnt.calls_init++;
	pthread_mutex_unlock(&lock);
	*ctx = c;
	return 0;
}
static int f_finalize(void *ctx)
{
	FAILPOINT("finalize");
	pthread_mutex_lock(&lock);
	if (!obj_has(ctx, 0x43545821))
		return misuse();
	obj_del(ctx);
	free(ctx);
	cnt.ctxs--;
	pthread_mutex_unlock(&lock);
	return 0;
}
static int ctx_ok(void *ctx)
{
	pthread_mutex_lock(&lock);
	int ok = obj_has(ctx, 0x43545821);
	if (!ok)
		cnt.misuse++;
	pthread_mutex_unlock(&lock);
	return ok;
}
static int f_listen11(void *ctx, int dev, void *h, void **lc)
{
	if (!ctx_ok(ctx))
		return NB_NET_INVALID_ARGUMENT;
	return f_listen_impl(dev, h, lc);
}
static int f_connect11(void *ctx, int dev, void *h, void **sc, struct nb_net_device_handle **dh)
{
	(void)dev;
	(void)dh;
	if (!ctx_ok(ctx))
		return NB_NET_INVALID_ARGUMENT;
	return f_connect_impl(h, sc);
}
static int f_attr(void *ctx, struct nb_net_attr *a)
{
	FAILPOINT("setNetAttr");
	(void)a;
	if (!ctx_ok(ctx))
		return NB_NET_INVALID_ARGUMENT;
	pthread_mutex_lock(&lock);
	cnt.calls_attr++;
	pthread_mutex_unlock(&lock);
	return 0;
}
#if FAKE_NET_VERSION == 11
static int f_props11(int dev, struct nb_net_props_v11 *p)
{
	FAILPOINT("getProperties");
	(void)dev;
	struct nb_net_props_v12 q;
	fill_props(&q);
	memcpy(p, &q, offsetof(struct nb_net_props_v11, vprops));
	p->vprops.ndevs = 1;
	p->max_p2p_bytes = q.max_p2p_bytes;
	p->max_coll_bytes = q.max_coll_bytes;
	p->max_multi_request_size = 1;
	return 0;
}
static int f_vdev11(int *d, struct nb_net_vprops_v10 *p)
{
	FAILPOINT("makeVDevice");
	(void)p;
	pthread_mutex_lock(&lock);
	cnt.calls_vdev++;
	pthread_mutex_unlock(&lock);
	*d = 1;
	return 0;
}
__attribute__((visibility("default"))) const struct nb_net_v11 ncclNetPlugin_v11 = {
	"fake", f_init, f_devices, f_props11, f_listen11, f_connect11, f_accept, f_reg,
	f_reg_dmabuf, f_dereg, f_isend, f_irecv, f_iflush, f_test, f_close_send, f_close_recv,
	f_close_listen, f_devmr, f_consumed, f_vdev11, f_finalize, f_attr,
};
#else
static int f_props12(int dev, struct nb_net_props_v12 *p)
{
	FAILPOINT("getProperties");
	(void)dev;
	fill_props(p);
	return 0;
}
static int f_vdev12(int *d, struct nb_net_vprops_v12 *p)
{
	FAILPOINT("makeVDevice");
	(void)p;
	pthread_mutex_lock(&lock);
	cnt.calls_vdev++;
	pthread_mutex_unlock(&lock);
	*d = 1;
	return 0;
}
__attribute__((visibility("default"))) const struct nb_net_v12 ncclNetPlugin_v12 = {
	"fake", f_init, f_devices, f_props12, f_listen11, f_connect11, f_accept, f_reg,
	f_reg_dmabuf, f_dereg, f_isend, f_irecv, f_iflush, f_test, f_close_send, f_close_recv,
	f_close_listen, f_devmr, f_consumed, f_vdev12, f_finalize, f_attr,
};
#endif
#endif

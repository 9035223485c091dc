/* Version-independent layer of the net plugin (see net_plugin.h): contexts, wrappers of
 * comms, requests and registrations, and the hook calls on the data path. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/net/net_log.h"
#include "plugin/net/net_plugin.h"

#define LOGN (NET_SUBSYS_NET)
#define CTX_MAGIC 0x4e435458u
#define COMM_MAGIC 0x4e434f4du
#define LISTEN_MAGIC 0x4e4c534eu
#define MR_MAGIC 0x4e4d5248u
#define REQ_MAGIC 0x4e525151u
#define NET_REQS 128 /* per comm: NCCL keeps at most NCCL_NET_MAX_REQUESTS (32) in flight */

struct net_ctx {
	uint32_t magic;
	int abi_version;
	uint64_t comm_id;
	struct nb_net_comm_config cfg;
	void *backend_ctx;
};

struct net_comm;

struct net_mr {
	uint32_t magic;
	struct net_mr *hnext;         /* live-set bucket chain */
	struct net_mr *cnext, *cprev; /* owner's list */
	struct net_comm *owner;       /* NULL once the comm closed (orphan) */
	void *inner_mh;
	bool empty;                   /* size 0: nothing registered in the backend */
};

struct net_req {
	uint32_t magic;
	bool used;
	bool is_send;
	int n;
	int tag;
	struct net_comm *comm;
	void *inner;
	uint64_t t0, bytes;
};

struct net_comm {
	uint32_t magic;
	bool is_send;
	int dev;
	int abi_version;
	uint64_t comm_id, conn_id, opened_ns;
	uint64_t total_bytes;
	struct tcp_conn_opts opts;
	void *inner;
	struct net_mr *mrs; /* live registrations on this comm (under mr_lock) */
	struct net_comm *lnext, *lprev; /* open comms (under comm_list_lock), for net_stats_get */
	/* free request slots; written only by the thread driving the comm (NCCL's proxy), read
	 * by net_stats_get: relaxed loads and stores, plain moves, no locked instruction */
	_Atomic int free_top;
	int free_idx[NET_REQS];
	struct net_req reqs[NET_REQS];
};

struct net_listen {
	uint32_t magic;
	int dev;
	struct net_ctx *ctx;
	void *inner;
};

static struct net_backend backend;
static int backend_state; /* 0 undecided, 1 ready, -1 unusable */
static bool backend_probed;
static pthread_mutex_t backend_lock = PTHREAD_MUTEX_INITIALIZER;
static nb_net_logger_t saved_log;
static _Atomic uint64_t next_conn_id = 1;
static _Atomic uint64_t stat_mrs;
static struct net_comm *comm_list;
static pthread_mutex_t comm_list_lock = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- live registrations */

#define MR_BUCKETS 1024
static struct net_mr *mr_buckets[MR_BUCKETS];
static pthread_mutex_t mr_lock = PTHREAD_MUTEX_INITIALIZER;

static unsigned mr_bucket(const void *p)
{
	uintptr_t x = (uintptr_t)p;
	return (unsigned)((x >> 4) ^ (x >> 14)) % MR_BUCKETS;
}

static bool mr_live_locked(const struct net_mr *m)
{
	for (struct net_mr *e = mr_buckets[mr_bucket(m)]; e; e = e->hnext)
		if (e == m)
			return true;
	return false;
}

static void mr_insert_locked(struct net_mr *m)
{
	unsigned b = mr_bucket(m);
	m->hnext = mr_buckets[b];
	mr_buckets[b] = m;
	if (m->owner) {
		m->cprev = NULL;
		m->cnext = m->owner->mrs;
		if (m->owner->mrs)
			m->owner->mrs->cprev = m;
		m->owner->mrs = m;
	}
	atomic_fetch_add(&stat_mrs, 1);
}

static void mr_unlink_owner_locked(struct net_mr *m)
{
	if (!m->owner)
		return;
	if (m->cprev)
		m->cprev->cnext = m->cnext;
	else
		m->owner->mrs = m->cnext;
	if (m->cnext)
		m->cnext->cprev = m->cprev;
	m->cnext = m->cprev = NULL;
	m->owner = NULL;
}

static void mr_remove_locked(struct net_mr *m)
{
	struct net_mr **pp = &mr_buckets[mr_bucket(m)];
	while (*pp && *pp != m)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = m->hnext;
	mr_unlink_owner_locked(m);
	m->magic = 0;
	atomic_fetch_sub(&stat_mrs, 1);
}

/* Requests are counted per comm (the data path pays no shared atomic); the totals are
 * summed here over the open comms. */
void net_stats_get(struct net_stats *out)
{
	out->comms_open = 0;
	out->reqs_live = 0;
	pthread_mutex_lock(&comm_list_lock);
	for (struct net_comm *w = comm_list; w; w = w->lnext) {
		out->comms_open++;
		out->reqs_live += (uint64_t)(NET_REQS -
					     atomic_load_explicit(&w->free_top, memory_order_relaxed));
	}
	pthread_mutex_unlock(&comm_list_lock);
	out->mrs_live = atomic_load(&stat_mrs);
}

/* ---------------------------------------------------------------- backend */

const struct net_backend *net_backend(void)
{
	return backend_state == 1 ? &backend : NULL;
}

static int backend_choose(nb_net_logger_t log, nb_net_prof_cb_t prof)
{
	pthread_mutex_lock(&backend_lock);
	if (backend_state == 0) {
		const char *inner = NULL;
#ifndef NCCLBPF_NET_STANDALONE
		inner = net_getenv("NCCLBPF_NET_INNER");
#endif
		if (inner && *inner) {
			char err[512];
			if (net_inner_load(inner, &backend, log, prof, err, sizeof(err)) == 0) {
				backend_state = 1;
				net_log(NET_INFO, LOGN | NET_SUBSYS_INIT,
					"net: wrap mode over %s (ncclNetPlugin_v%d)", backend.path,
					backend.inner_version);
			} else {
				backend_state = -1;
				net_log(NET_WARN, LOGN | NET_SUBSYS_INIT,
					"net: NCCLBPF_NET_INNER=%s unusable: %s; the ncclbpf net plugin "
					"declines and NCCL uses its next transport",
					inner, err);
			}
		} else {
			backend.ops = &net_tcp_ops;
			backend.is_tcp = true;
			backend.inner_version = 0;
			snprintf(backend.path, sizeof(backend.path), "tcp");
			backend_state = 1;
		}
	}
	int st = backend_state;
	pthread_mutex_unlock(&backend_lock);
	return st;
}

/* ---------------------------------------------------------------- init / finalize */

int netp_init(void **ctx, uint64_t comm_id, const struct nb_net_comm_config *cfg,
	      nb_net_logger_t log, nb_net_prof_cb_t prof, int abi_version)
{
	if (!ctx)
		return NB_NET_INVALID_ARGUMENT;
	*ctx = NULL;
	if (log) {
		net_set_logger(log);
		saved_log = log;
	}
	net_hooks_init(log);
	if (backend_choose(log ? log : saved_log, prof) != 1)
		return NB_NET_INTERNAL_ERROR;
	struct net_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		return NB_NET_SYSTEM_ERROR;
	c->magic = CTX_MAGIC;
	c->abi_version = abi_version;
	c->comm_id = comm_id;
	c->cfg.traffic_class = cfg ? cfg->traffic_class : -1;
	int rc = backend.ops->init(&c->backend_ctx, comm_id, &c->cfg, log ? log : saved_log, prof);
	if (rc != NB_NET_SUCCESS) {
		net_log(NET_WARN, LOGN, "net: backend init failed (%d)", rc);
		free(c);
		return rc;
	}
	/* regIsGlobal decides whether deregMr may name another comm; ask once the backend is
	 * initialised (an inner plugin knows its devices only after init) */
	pthread_mutex_lock(&backend_lock);
	if (!backend_probed) {
		struct nb_net_props_v12 p;
		int nd = 0;
		backend_probed = true;
		if (backend.ops->devices(&nd) == 0 && nd > 0 && backend.ops->get_properties(0, &p) == 0)
			backend.reg_is_global = p.reg_is_global;
	}
	pthread_mutex_unlock(&backend_lock);
	*ctx = c;
	return NB_NET_SUCCESS;
}

int netp_finalize(void *ctx)
{
	struct net_ctx *c = ctx;
	if (!c || c->magic != CTX_MAGIC)
		return NB_NET_INVALID_ARGUMENT;
	int rc = backend.ops->finalize ? backend.ops->finalize(c->backend_ctx) : NB_NET_SUCCESS;
	c->magic = 0;
	free(c);
	return rc;
}

int netp_devices(int *ndev)
{
	if (!ndev)
		return NB_NET_INVALID_ARGUMENT;
	if (backend_state != 1) {
		*ndev = 0;
		return NB_NET_INTERNAL_ERROR;
	}
	return backend.ops->devices(ndev);
}

int netp_get_properties(int dev, struct nb_net_props_v12 *props)
{
	if (!props || backend_state != 1)
		return NB_NET_INVALID_ARGUMENT;
	return backend.ops->get_properties(dev, props);
}

/* ---------------------------------------------------------------- listen / connect / accept */

int netp_listen(void *ctx, int dev, void *handle, void **listen_comm)
{
	struct net_ctx *c = ctx;
	if (!c || c->magic != CTX_MAGIC || !listen_comm || !handle)
		return NB_NET_INVALID_ARGUMENT;
	*listen_comm = NULL;
	struct net_listen *l = calloc(1, sizeof(*l));
	if (!l)
		return NB_NET_SYSTEM_ERROR;
	int rc = backend.ops->listen(c->backend_ctx, dev, handle, &l->inner);
	if (rc != NB_NET_SUCCESS || !l->inner) {
		free(l);
		return rc != NB_NET_SUCCESS ? rc : NB_NET_INTERNAL_ERROR;
	}
	l->magic = LISTEN_MAGIC;
	l->dev = dev;
	l->ctx = c;
	*listen_comm = l;
	return NB_NET_SUCCESS;
}

static struct net_comm *comm_wrap(bool is_send, int dev, const struct net_ctx *ctx, void *inner)
{
	struct net_comm *w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->magic = COMM_MAGIC;
	w->is_send = is_send;
	w->dev = dev;
	w->abi_version = ctx ? ctx->abi_version : 0;
	w->comm_id = ctx ? ctx->comm_id : 0;
	w->inner = inner;
	w->opened_ns = net_now_ns();
	for (int i = 0; i < NET_REQS; i++) {
		w->free_idx[i] = NET_REQS - 1 - i;
		w->reqs[i].comm = w;
	}
	atomic_init(&w->free_top, NET_REQS);
	pthread_mutex_lock(&comm_list_lock);
	w->lnext = comm_list;
	if (comm_list)
		comm_list->lprev = w;
	comm_list = w;
	pthread_mutex_unlock(&comm_list_lock);
	return w;
}

/* Connections NCCL is still driving through connect (it calls again with the same handle
 * until a comm comes back): the connect hook runs once, at the first call. */
#define PENDING_CONNECTS 256
struct pending_connect {
	void *handle;
	uint64_t conn_id;
	struct tcp_conn_opts opts;
};
static struct pending_connect pending[PENDING_CONNECTS];
static unsigned pending_next;
static pthread_mutex_t pending_lock = PTHREAD_MUTEX_INITIALIZER;

static bool pending_take(void *handle, struct pending_connect *out, bool remove)
{
	bool found = false;
	pthread_mutex_lock(&pending_lock);
	for (int i = 0; i < PENDING_CONNECTS && !found; i++) {
		if (pending[i].handle != handle)
			continue;
		*out = pending[i];
		if (remove)
			pending[i].handle = NULL;
		found = true;
	}
	pthread_mutex_unlock(&pending_lock);
	return found;
}

static void pending_put(const struct pending_connect *p)
{
	pthread_mutex_lock(&pending_lock);
	int slot = -1;
	for (int i = 0; i < PENDING_CONNECTS && slot < 0; i++)
		if (!pending[i].handle)
			slot = i;
	if (slot < 0) /* abandoned attempts (NCCL aborted): reuse the oldest slot */
		slot = (int)(pending_next++ % PENDING_CONNECTS);
	pending[slot] = *p;
	pthread_mutex_unlock(&pending_lock);
}

static uint32_t clamp_u32(uint32_t v, uint32_t lo, uint32_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

int netp_connect(void *ctx, int dev, void *handle, void **send_comm,
		 struct nb_net_device_handle **dev_comm)
{
	struct net_ctx *c = ctx;
	if (!c || c->magic != CTX_MAGIC || !send_comm || !handle)
		return NB_NET_INVALID_ARGUMENT;
	*send_comm = NULL;
	struct pending_connect p;
	if (!pending_take(handle, &p, false)) {
		p.handle = handle;
		p.conn_id = atomic_fetch_add(&next_conn_id, 1);
		const struct tcp_config *tc = tcp_config();
		p.opts.n_data = backend.is_tcp ? tc->n_data : 0;
		p.opts.n_threads = backend.is_tcp ? tc->n_threads : 0;
		if (net_hooks_active()) {
			struct net_hook_args a = { .comm_id = c->comm_id, .conn_id = p.conn_id,
						   .op = NET_OP_CONNECT, .dev = (uint32_t)dev,
						   .abi_version = (uint32_t)c->abi_version,
						   .mode = backend.is_tcp ? 0 : 1, .tag = -1,
						   .n_sockets = (uint32_t)p.opts.n_data,
						   .n_threads = (uint32_t)p.opts.n_threads };
			if (net_hooks_run(&a) == 0 && backend.is_tcp) {
				p.opts.n_data = (int)clamp_u32(a.n_sockets, 0, TCP_MAX_DATA_SOCKS);
				p.opts.n_threads = (int)clamp_u32(a.n_threads, 1, TCP_MAX_THREADS);
			}
		}
		pending_put(&p);
	}
	void *inner = NULL;
	int rc = backend.is_tcp ? tcp_connect(dev, handle, &p.opts, &inner)
				: backend.ops->connect(c->backend_ctx, dev, handle, &inner, dev_comm);
	if (rc != NB_NET_SUCCESS || inner) {
		struct pending_connect drop;
		pending_take(handle, &drop, true);
	}
	if (rc != NB_NET_SUCCESS || !inner)
		return rc;
	struct net_comm *w = comm_wrap(true, dev, c, inner);
	if (!w) {
		backend.ops->close_send(inner);
		return NB_NET_SYSTEM_ERROR;
	}
	w->conn_id = p.conn_id;
	if (backend.is_tcp)
		tcp_comm_opts(inner, &w->opts);
	*send_comm = w;
	return NB_NET_SUCCESS;
}

int netp_accept(void *listen_comm, void **recv_comm, struct nb_net_device_handle **dev_comm)
{
	struct net_listen *l = listen_comm;
	if (!l || l->magic != LISTEN_MAGIC || !recv_comm)
		return NB_NET_INVALID_ARGUMENT;
	*recv_comm = NULL;
	void *inner = NULL;
	int rc = backend.ops->accept(l->inner, &inner, dev_comm);
	if (rc != NB_NET_SUCCESS || !inner)
		return rc;
	struct net_comm *w = comm_wrap(false, l->dev, l->ctx, inner);
	if (!w) {
		backend.ops->close_recv(inner);
		return NB_NET_SYSTEM_ERROR;
	}
	w->conn_id = atomic_fetch_add(&next_conn_id, 1);
	if (backend.is_tcp)
		tcp_comm_opts(inner, &w->opts);
	if (net_hooks_active()) {
		struct net_hook_args a = { .comm_id = w->comm_id, .conn_id = w->conn_id,
					   .op = NET_OP_ACCEPT, .dev = (uint32_t)l->dev,
					   .abi_version = (uint32_t)w->abi_version,
					   .mode = backend.is_tcp ? 0 : 1, .tag = -1,
					   .n_sockets = (uint32_t)w->opts.n_data,
					   .n_threads = (uint32_t)w->opts.n_threads };
		net_hooks_run(&a); /* the connector chose the counts; writes are ignored here */
	}
	*recv_comm = w;
	return NB_NET_SUCCESS;
}

/* ---------------------------------------------------------------- registration */

static struct net_comm *as_comm(void *p)
{
	struct net_comm *w = p;
	return w && w->magic == COMM_MAGIC ? w : NULL;
}

static int reg_common(void *comm, void *data, size_t size, int type, bool dmabuf,
		      uint64_t offset, int fd, void **mh)
{
	struct net_comm *w = as_comm(comm);
	if (!mh)
		return NB_NET_INVALID_ARGUMENT;
	*mh = NULL;
	if (!w) {
		net_log(NET_WARN, LOGN, "net: regMr on a comm that is not open");
		return NB_NET_INVALID_ARGUMENT;
	}
	if (size && !data) {
		net_log(NET_WARN, LOGN, "net: regMr of %zu bytes at NULL", size);
		return NB_NET_INVALID_ARGUMENT;
	}
	if ((uintptr_t)data + size < (uintptr_t)data ||
	    (dmabuf && offset + (uint64_t)size < offset)) {
		net_log(NET_WARN, LOGN, "net: regMr %p + %zu bytes wraps the address space", data, size);
		return NB_NET_INVALID_ARGUMENT;
	}
	if (dmabuf && size && fd < 0)
		return NB_NET_INVALID_ARGUMENT;
	struct net_mr *m = calloc(1, sizeof(*m));
	if (!m)
		return NB_NET_SYSTEM_ERROR;
	m->magic = MR_MAGIC;
	m->empty = size == 0;
	if (!m->empty) {
		int rc;
		if (dmabuf)
			rc = backend.ops->reg_mr_dma_buf
				     ? backend.ops->reg_mr_dma_buf(w->inner, data, size, type, offset,
								   fd, &m->inner_mh)
				     : NB_NET_INTERNAL_ERROR;
		else
			rc = backend.ops->reg_mr(w->inner, data, size, type, &m->inner_mh);
		if (rc != NB_NET_SUCCESS) {
			free(m);
			return rc;
		}
	}
	pthread_mutex_lock(&mr_lock);
	m->owner = w;
	mr_insert_locked(m);
	pthread_mutex_unlock(&mr_lock);
	*mh = m;
	return NB_NET_SUCCESS;
}

int netp_reg_mr(void *comm, void *data, size_t size, int type, void **mh)
{
	return reg_common(comm, data, size, type, false, 0, -1, mh);
}

int netp_reg_mr_dma_buf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
			void **mh)
{
	return reg_common(comm, data, size, type, true, offset, fd, mh);
}

int netp_dereg_mr(void *comm, void *mh)
{
	struct net_mr *m = mh;
	if (!m)
		return NB_NET_SUCCESS;
	pthread_mutex_lock(&mr_lock);
	if (!mr_live_locked(m)) {
		pthread_mutex_unlock(&mr_lock);
		net_log(NET_WARN, LOGN, "net: deregMr of %p: not a live registration (twice?)", mh);
		return NB_NET_INVALID_ARGUMENT;
	}
	struct net_comm *owner = m->owner;
	if (owner && owner != comm && !backend.reg_is_global) {
		pthread_mutex_unlock(&mr_lock);
		net_log(NET_WARN, LOGN, "net: deregMr of %p on another comm than it was registered on", mh);
		return NB_NET_INVALID_ARGUMENT;
	}
	void *inner_mh = m->inner_mh;
	bool call = owner && !m->empty;
	mr_remove_locked(m);
	pthread_mutex_unlock(&mr_lock);
	/* the comm closed first: close already released it in the backend (orphan) */
	int rc = call ? backend.ops->dereg_mr(owner->inner, inner_mh) : NB_NET_SUCCESS;
	free(m);
	return rc;
}

static inline void *inner_mh(void *mh)
{
	struct net_mr *m = mh;
	return m && m->magic == MR_MAGIC ? m->inner_mh : NULL;
}

int netp_get_device_mr(void *comm, void *mh, void **dptr_mh)
{
	struct net_comm *w = as_comm(comm);
	if (!w || !backend.ops->get_device_mr)
		return NB_NET_INVALID_ARGUMENT;
	return backend.ops->get_device_mr(w->inner, inner_mh(mh), dptr_mh);
}

/* ---------------------------------------------------------------- data path */

static struct net_req *req_get(struct net_comm *w)
{
	int top = atomic_load_explicit(&w->free_top, memory_order_relaxed);
	if (!top)
		return NULL;
	struct net_req *r = &w->reqs[w->free_idx[--top]];
	atomic_store_explicit(&w->free_top, top, memory_order_relaxed);
	r->magic = REQ_MAGIC;
	r->used = true;
	r->inner = NULL;
	return r;
}

static void req_put(struct net_req *r)
{
	struct net_comm *w = r->comm;
	int top = atomic_load_explicit(&w->free_top, memory_order_relaxed);
	r->used = false;
	r->magic = 0;
	w->free_idx[top] = (int)(r - w->reqs);
	atomic_store_explicit(&w->free_top, top + 1, memory_order_relaxed);
}

static void hook_data(struct net_comm *w, uint32_t op, uint64_t bytes, int tag, int n,
		      uint64_t duration, uint64_t now)
{
	struct net_hook_args a = { .comm_id = w->comm_id, .conn_id = w->conn_id, .bytes = bytes,
				   .duration_ns = duration, .op = op, .dev = (uint32_t)w->dev,
				   .n_recv = (uint32_t)n, .abi_version = (uint32_t)w->abi_version,
				   .mode = backend.is_tcp ? 0 : 1, .tag = tag,
				   .n_sockets = (uint32_t)w->opts.n_data,
				   .n_threads = (uint32_t)w->opts.n_threads, .now_ns = now };
	net_hooks_run(&a);
}

/* Requests handed to NCCL. Without programs attached, the backend's own request (bit 0 of
 * its pointer clear): test() is then a check and a jump into the backend, no wrapper, no
 * extra call frame on NCCL's polling loop. With programs attached at post time (or a
 * backend handle with bit 0 set), our wrapper, tagged with bit 0 (struct net_req is
 * aligned, so the bit is free). Consequence: completion hooks and the CLOSE hook's byte
 * count cover requests posted while programs were attached. */
#define REQ_TAG ((uintptr_t)1)

static inline struct net_req *req_untag(void *p)
{
	return (uintptr_t)p & REQ_TAG ? (struct net_req *)((uintptr_t)p & ~REQ_TAG) : NULL;
}

static inline bool req_slot_free(struct net_comm *w)
{
	return atomic_load_explicit(&w->free_top, memory_order_relaxed) != 0;
}

/* The backend accepted inner: what NCCL gets (NULL only when no slot: cannot happen, the
 * caller checked req_slot_free and one thread drives a comm). */
static void *req_hand_out(struct net_comm *w, void *inner, bool hooked, struct net_req **out)
{
	*out = NULL;
	if (!hooked && !((uintptr_t)inner & REQ_TAG))
		return inner;
	struct net_req *r = req_get(w);
	if (!r)
		return NULL;
	r->inner = inner;
	r->t0 = 0;
	*out = r;
	return (void *)((uintptr_t)r | REQ_TAG);
}

int netp_isend(void *send_comm, void *data, size_t size, int tag, void *mh, void *phandle,
	       void **req)
{
	struct net_comm *w = as_comm(send_comm);
	if (!w || !w->is_send || !req)
		return NB_NET_INVALID_ARGUMENT;
	*req = NULL;
	if (!req_slot_free(w))
		return NB_NET_SUCCESS; /* NCCL retries */
	bool hooked = net_hooks_active();
	void *inner = NULL;
	int rc = backend.is_tcp ? tcp_isend(w->inner, data, size, tag, &inner)
				: backend.ops->isend(w->inner, data, size, tag, inner_mh(mh), phandle,
						     &inner);
	if (rc != NB_NET_SUCCESS || !inner)
		return rc;
	struct net_req *r;
	*req = req_hand_out(w, inner, hooked, &r);
	if (r) {
		r->is_send = true;
		r->n = 1;
		r->tag = tag;
		r->bytes = size;
		if (hooked) {
			r->t0 = net_now_ns();
			hook_data(w, NET_OP_ISEND, size, tag, 1, 0, r->t0);
		}
	}
	return NB_NET_SUCCESS;
}

int netp_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhs,
	       void **phandles, void **req)
{
	struct net_comm *w = as_comm(recv_comm);
	if (!w || w->is_send || !req || n < 1 || n > TCP_MAX_RECVS || !sizes || !tags)
		return NB_NET_INVALID_ARGUMENT;
	/* NCCL may pass NCCL_NET_OPTIONAL_RECV_COMPLETION in *req as a hint (LL/LL128): the
	 * inner plugin gets it as NCCL gave it; the tcp transport always completes */
	void *inner = *req;
	*req = NULL;
	if (!req_slot_free(w))
		return NB_NET_SUCCESS;
	bool hooked = net_hooks_active();
	int rc;
	if (backend.is_tcp) {
		rc = tcp_irecv(w->inner, n, data, sizes, tags, &inner);
	} else if (!mhs) {
		rc = backend.ops->irecv(w->inner, n, data, sizes, tags, NULL, phandles, &inner);
	} else {
		void *imhs[TCP_MAX_RECVS];
		for (int i = 0; i < n; i++)
			imhs[i] = inner_mh(mhs[i]);
		rc = backend.ops->irecv(w->inner, n, data, sizes, tags, imhs, phandles, &inner);
	}
	if (rc != NB_NET_SUCCESS || !inner)
		return rc;
	struct net_req *r;
	*req = req_hand_out(w, inner, hooked, &r);
	if (r) {
		r->is_send = false;
		r->n = n;
		r->tag = tags[0];
		if (hooked) {
			uint64_t cap = 0;
			for (int i = 0; i < n; i++)
				cap += sizes[i];
			r->t0 = net_now_ns();
			hook_data(w, NET_OP_IRECV, cap, tags[0], n, 0, r->t0);
		}
	}
	return NB_NET_SUCCESS;
}

int netp_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhs, void **req)
{
	struct net_comm *w = as_comm(recv_comm);
	if (!w || !req || n < 1 || n > TCP_MAX_RECVS)
		return NB_NET_INVALID_ARGUMENT;
	*req = NULL;
	if (!backend.ops->iflush)
		return NB_NET_SUCCESS; /* host memory: nothing to flush */
	if (!req_slot_free(w))
		return NB_NET_SUCCESS;
	void *imhs[TCP_MAX_RECVS];
	for (int i = 0; i < n; i++)
		imhs[i] = mhs ? inner_mh(mhs[i]) : NULL;
	void *inner = NULL;
	int rc = backend.ops->iflush(w->inner, n, data, sizes, mhs ? imhs : NULL, &inner);
	if (rc != NB_NET_SUCCESS || !inner)
		return rc;
	struct net_req *r;
	*req = req_hand_out(w, inner, false, &r);
	if (r)
		r->n = -1; /* flush: no hook */
	return NB_NET_SUCCESS;
}

/* Completion bookkeeping of a wrapped request (bytes for the CLOSE hook, the completion
 * hook) and the slot's return. */
static void req_complete(struct net_req *r, const int *sz)
{
	struct net_comm *w = r->comm;
	if (r->n > 0) {
		uint64_t bytes = 0;
		for (int i = 0; i < r->n; i++)
			bytes += sz[i] > 0 ? (uint64_t)sz[i] : 0;
		w->total_bytes += bytes;
		if (r->t0 && net_hooks_active()) {
			uint64_t now = net_now_ns();
			hook_data(w, r->is_send ? NET_OP_SEND_DONE : NET_OP_RECV_DONE, bytes, r->tag,
				  r->n, now - r->t0, now);
		}
	}
	req_put(r);
}

static __attribute__((noinline)) int test_wrapped(struct net_req *r, int *done, int *sizes)
{
	if (r->magic != REQ_MAGIC || !r->used)
		return NB_NET_INVALID_ARGUMENT;
	int local[TCP_MAX_RECVS];
	int *sz = sizes ? sizes : local;
	int rc = backend.is_tcp ? tcp_test(r->inner, done, sz) : backend.ops->test(r->inner, done, sz);
	if (rc == NB_NET_SUCCESS && *done)
		req_complete(r, sz);
	return rc;
}

/* NCCL's proxy calls this in a tight loop while a request is pending. A backend request
 * (no programs attached) goes straight to the backend as a tail call. */
int netp_test(void *request, int *done, int *sizes)
{
	if (!request || !done)
		return NB_NET_INVALID_ARGUMENT;
	struct net_req *r = req_untag(request);
	if (r)
		return test_wrapped(r, done, sizes);
	return backend.is_tcp ? tcp_test(request, done, sizes)
			      : backend.ops->test(request, done, sizes);
}

int netp_irecv_consumed(void *recv_comm, int n, void *request)
{
	struct net_comm *w = as_comm(recv_comm);
	struct net_req *r = req_untag(request);
	if (!w || !backend.ops->irecv_consumed)
		return NB_NET_INVALID_ARGUMENT;
	return backend.ops->irecv_consumed(w->inner, n,
					   r && r->magic == REQ_MAGIC ? r->inner : request);
}

/* ---------------------------------------------------------------- close */

static int close_comm(void *comm, bool is_send)
{
	struct net_comm *w = as_comm(comm);
	if (!w || w->is_send != is_send)
		return NB_NET_INVALID_ARGUMENT;
	if (net_hooks_active())
		hook_data(w, NET_OP_CLOSE, w->total_bytes, -1, 0, net_now_ns() - w->opened_ns, 0);
	/* registrations still open: release them in the backend now, while its comm exists; a
	 * later deregMr only frees the wrapper */
	pthread_mutex_lock(&mr_lock);
	struct net_mr *m = w->mrs;
	while (m) {
		struct net_mr *next = m->cnext;
		if (!m->empty) {
			int rc = backend.ops->dereg_mr(w->inner, m->inner_mh);
			if (rc != NB_NET_SUCCESS)
				net_log(NET_WARN, LOGN, "net: releasing a registration at close: error %d", rc);
		}
		m->inner_mh = NULL;
		m->empty = true;
		mr_unlink_owner_locked(m);
		m = next;
	}
	pthread_mutex_unlock(&mr_lock);
	int rc = is_send ? backend.ops->close_send(w->inner) : backend.ops->close_recv(w->inner);
	pthread_mutex_lock(&comm_list_lock);
	if (w->lprev)
		w->lprev->lnext = w->lnext;
	else
		comm_list = w->lnext;
	if (w->lnext)
		w->lnext->lprev = w->lprev;
	pthread_mutex_unlock(&comm_list_lock);
	w->magic = 0;
	free(w);
	return rc;
}

int netp_close_send(void *send_comm)
{
	return close_comm(send_comm, true);
}

int netp_close_recv(void *recv_comm)
{
	return close_comm(recv_comm, false);
}

int netp_close_listen(void *listen_comm)
{
	struct net_listen *l = listen_comm;
	if (!l || l->magic != LISTEN_MAGIC)
		return NB_NET_INVALID_ARGUMENT;
	int rc = backend.ops->close_listen(l->inner);
	l->magic = 0;
	free(l);
	return rc;
}

/* ---------------------------------------------------------------- optional members */

int netp_make_vdevice(int *d, struct nb_net_vprops_v12 *props)
{
	if (!backend.ops || !backend.ops->make_vdevice)
		return NB_NET_INVALID_USAGE;
	return backend.ops->make_vdevice(d, props);
}

int netp_set_net_attr(void *ctx, struct nb_net_attr *attr)
{
	struct net_ctx *c = ctx;
	if (!c || c->magic != CTX_MAGIC)
		return NB_NET_INVALID_ARGUMENT;
	if (!backend.ops->set_net_attr)
		return NB_NET_SUCCESS;
	return backend.ops->set_net_attr(c->backend_ctx, attr);
}

/* ---------------------------------------------------------------- property conversions */

#define COPY_COMMON(o, i)                                                                  \
	do {                                                                               \
		(o)->name = (i)->name;                                                     \
		(o)->pci_path = (i)->pci_path;                                             \
		(o)->guid = (i)->guid;                                                     \
		(o)->ptr_support = (i)->ptr_support;                                       \
		(o)->reg_is_global = (i)->reg_is_global;                                   \
		(o)->force_flush = (i)->force_flush;                                       \
		(o)->speed = (i)->speed;                                                   \
		(o)->port = (i)->port;                                                     \
		(o)->latency = (i)->latency;                                               \
		(o)->max_comms = (i)->max_comms;                                           \
		(o)->max_recvs = (i)->max_recvs;                                           \
		(o)->net_device_type = (i)->net_device_type;                               \
		(o)->net_device_version = (i)->net_device_version;                         \
		(o)->max_p2p_bytes = (i)->max_p2p_bytes;                                   \
		(o)->max_coll_bytes = (i)->max_coll_bytes;                                 \
	} while (0)

#define COPY_VPROPS(o, i, max_out)                                                         \
	do {                                                                               \
		int nd_ = (i)->vprops.ndevs < 0 ? 0 : (i)->vprops.ndevs;                   \
		if (nd_ > (max_out))                                                       \
			nd_ = (max_out);                                                   \
		(o)->vprops.ndevs = nd_;                                                   \
		for (int k_ = 0; k_ < nd_; k_++)                                           \
			(o)->vprops.devs[k_] = (i)->vprops.devs[k_];                       \
	} while (0)

void net_props_to_v10(const struct nb_net_props_v12 *in, struct nb_net_props_v10 *out)
{
	memset(out, 0, sizeof(*out));
	COPY_COMMON(out, in);
	COPY_VPROPS(out, in, 4);
}

void net_props_to_v11(const struct nb_net_props_v12 *in, struct nb_net_props_v11 *out)
{
	memset(out, 0, sizeof(*out));
	COPY_COMMON(out, in);
	COPY_VPROPS(out, in, 4);
	out->max_multi_request_size = in->max_multi_request_size;
}

void net_props_from_v10(const struct nb_net_props_v10 *in, struct nb_net_props_v12 *out)
{
	memset(out, 0, sizeof(*out));
	COPY_COMMON(out, in);
	COPY_VPROPS(out, in, 4);
	out->max_multi_request_size = 1;
	out->rail_id = -1;
	out->plane_id = -1;
}

void net_props_from_v11(const struct nb_net_props_v11 *in, struct nb_net_props_v12 *out)
{
	memset(out, 0, sizeof(*out));
	COPY_COMMON(out, in);
	COPY_VPROPS(out, in, 4);
	out->max_multi_request_size = in->max_multi_request_size;
	out->rail_id = -1;
	out->plane_id = -1;
}

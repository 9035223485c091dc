#define _GNU_SOURCE
/* Wrap mode: loads the net plugin named by NCCLBPF_NET_INNER and presents it as a v12
 * backend. A v12 inner is used as is; v11 gets its properties converted; v10 is initialised
 * once per process (as NCCL's own shim does) and gets the per-comm config at connect.
 * The inner library stays loaded for the life of the process: ncclbpf is linked -z nodelete
 * and the inner's threads may outlive any one communicator. */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "plugin/net/net_log.h"
#include "plugin/net/net_plugin.h"

static const struct nb_net_v10 *in10;
static const struct nb_net_v11 *in11;
static const struct nb_net_v12 *in12;
static struct nb_net_v12 adapted;
static pthread_mutex_t v10_lock = PTHREAD_MUTEX_INITIALIZER;
static int v10_refs;
static nb_net_logger_t v10_log;
static nb_net_prof_cb_t v10_prof;

/* ---- v11 inner ---- */
static int a11_props(int dev, struct nb_net_props_v12 *p)
{
	struct nb_net_props_v11 q;
	memset(&q, 0, sizeof(q));
	int rc = in11->get_properties(dev, &q);
	if (rc == NB_NET_SUCCESS)
		net_props_from_v11(&q, p);
	return rc;
}

static int a11_vdev(int *d, struct nb_net_vprops_v12 *p)
{
	struct nb_net_vprops_v10 q = { 0, { 0 } };
	if (!p || p->ndevs < 0 || p->ndevs > 4)
		return NB_NET_INVALID_ARGUMENT;
	q.ndevs = p->ndevs;
	memcpy(q.devs, p->devs, sizeof(int) * (size_t)q.ndevs);
	return in11->make_vdevice(d, &q);
}

/* ---- v10 inner ---- */
static int a10_init(void **ctx, uint64_t comm_id, struct nb_net_comm_config *cfg,
		    nb_net_logger_t log, nb_net_prof_cb_t prof)
{
	(void)comm_id;
	struct nb_net_comm_config *c = malloc(sizeof(*c));
	if (!c)
		return NB_NET_SYSTEM_ERROR;
	c->traffic_class = cfg ? cfg->traffic_class : -1;
	pthread_mutex_lock(&v10_lock);
	int rc = NB_NET_SUCCESS;
	if (v10_refs == 0 && !v10_log) { /* once per process: v10 plugins have no finalize */
		v10_log = log;
		v10_prof = prof;
		rc = in10->init(log, prof);
		if (rc != NB_NET_SUCCESS)
			v10_log = NULL;
	}
	if (rc == NB_NET_SUCCESS)
		v10_refs++;
	pthread_mutex_unlock(&v10_lock);
	if (rc != NB_NET_SUCCESS) {
		free(c);
		return rc;
	}
	*ctx = c;
	return NB_NET_SUCCESS;
}

static int a10_finalize(void *ctx)
{
	pthread_mutex_lock(&v10_lock);
	if (v10_refs > 0)
		v10_refs--;
	pthread_mutex_unlock(&v10_lock);
	free(ctx);
	return NB_NET_SUCCESS;
}

static int a10_props(int dev, struct nb_net_props_v12 *p)
{
	struct nb_net_props_v10 q;
	memset(&q, 0, sizeof(q));
	int rc = in10->get_properties(dev, &q);
	if (rc == NB_NET_SUCCESS)
		net_props_from_v10(&q, p);
	return rc;
}

static int a10_listen(void *ctx, int dev, void *handle, void **lc)
{
	(void)ctx;
	return in10->listen(dev, handle, lc);
}

static int a10_connect(void *ctx, int dev, void *handle, void **sc, struct nb_net_device_handle **dh)
{
	return in10->connect(dev, ctx, handle, sc, dh);
}

static int a10_vdev(int *d, struct nb_net_vprops_v12 *p)
{
	struct nb_net_vprops_v10 q = { 0, { 0 } };
	if (!p || p->ndevs < 0 || p->ndevs > 4)
		return NB_NET_INVALID_ARGUMENT;
	q.ndevs = p->ndevs;
	memcpy(q.devs, p->devs, sizeof(int) * (size_t)q.ndevs);
	return in10->make_vdevice(d, &q);
}

#define COPY_DATA_MEMBERS(dst, src)                                                        \
	do {                                                                               \
		(dst)->name = (src)->name;                                                 \
		(dst)->devices = (src)->devices;                                           \
		(dst)->accept = (src)->accept;                                             \
		(dst)->reg_mr = (src)->reg_mr;                                             \
		(dst)->reg_mr_dma_buf = (src)->reg_mr_dma_buf;                             \
		(dst)->dereg_mr = (src)->dereg_mr;                                         \
		(dst)->isend = (src)->isend;                                               \
		(dst)->irecv = (src)->irecv;                                               \
		(dst)->iflush = (src)->iflush;                                             \
		(dst)->test = (src)->test;                                                 \
		(dst)->close_send = (src)->close_send;                                     \
		(dst)->close_recv = (src)->close_recv;                                     \
		(dst)->close_listen = (src)->close_listen;                                 \
		(dst)->get_device_mr = (src)->get_device_mr;                               \
		(dst)->irecv_consumed = (src)->irecv_consumed;                             \
	} while (0)

/* True when path names this very library (wrapping ourselves would recurse forever). */
static bool is_self(void *h)
{
	Dl_info self;
	struct link_map *lm = NULL;
	if (!dladdr((void *)net_inner_load, &self) || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
		return false;
	struct stat a, b;
	return lm->l_name && self.dli_fname && stat(lm->l_name, &a) == 0 &&
	       stat(self.dli_fname, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static bool required_present(const struct nb_net_v12 *t)
{
	return t->init && t->devices && t->get_properties && t->listen && t->connect && t->accept &&
	       t->reg_mr && t->dereg_mr && t->isend && t->irecv && t->test && t->close_send &&
	       t->close_recv && t->close_listen;
}

int net_inner_load(const char *path, struct net_backend *out, nb_net_logger_t log,
		   nb_net_prof_cb_t prof, char *err, size_t errlen)
{
	(void)log;
	(void)prof;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "dlopen: %s", dlerror());
		return -ENOENT;
	}
	if (is_self(h)) {
		dlclose(h);
		snprintf(err, errlen, "it is the ncclbpf library itself");
		return -ELOOP;
	}
	memset(out, 0, sizeof(*out));
	snprintf(out->path, sizeof(out->path), "%s", path);
	if ((in12 = dlsym(h, "ncclNetPlugin_v12"))) {
		adapted = *in12;
		out->inner_version = 12;
	} else if ((in11 = dlsym(h, "ncclNetPlugin_v11"))) {
		memset(&adapted, 0, sizeof(adapted));
		COPY_DATA_MEMBERS(&adapted, in11);
		adapted.init = in11->init;
		adapted.listen = in11->listen;
		adapted.connect = in11->connect;
		adapted.finalize = in11->finalize;
		adapted.set_net_attr = in11->set_net_attr;
		adapted.get_properties = in11->get_properties ? a11_props : NULL;
		adapted.make_vdevice = in11->make_vdevice ? a11_vdev : NULL;
		out->inner_version = 11;
	} else if ((in10 = dlsym(h, "ncclNetPlugin_v10"))) {
		memset(&adapted, 0, sizeof(adapted));
		COPY_DATA_MEMBERS(&adapted, in10);
		adapted.init = in10->init ? a10_init : NULL;
		adapted.finalize = a10_finalize;
		adapted.get_properties = in10->get_properties ? a10_props : NULL;
		adapted.listen = in10->listen ? a10_listen : NULL;
		adapted.connect = in10->connect ? a10_connect : NULL;
		adapted.make_vdevice = in10->make_vdevice ? a10_vdev : NULL;
		out->inner_version = 10;
	} else {
		dlclose(h);
		snprintf(err, errlen, "no ncclNetPlugin_v12, _v11 or _v10 in %s", path);
		return -ENOENT;
	}
	if (!required_present(&adapted)) {
		dlclose(h);
		snprintf(err, errlen, "ncclNetPlugin_v%d in %s lacks a required function",
			 out->inner_version, path);
		return -EINVAL;
	}
	out->ops = &adapted;
	out->is_tcp = false;
	return 0; /* h stays open for the life of the process */
}

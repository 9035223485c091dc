#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "net_harness.h"

#define V10(h) ((const struct nb_net_v10 *)(h)->table)
#define V11(h) ((const struct nb_net_v11 *)(h)->table)
#define V12(h) ((const struct nb_net_v12 *)(h)->table)
/* data members have the same offsets and types in every version */
#define DATA(h) V12(h)

static void dummy_log(int level, unsigned long flags, const char *file, int line,
		      const char *fmt, ...)
{
	(void)level; (void)flags; (void)file; (void)line; (void)fmt;
}

uint64_t hnet_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int hnet_open(struct hnet *h, void *dl, int version)
{
	char sym[32];
	snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", version);
	h->version = version;
	h->ctx = NULL;
	h->table = dlsym(dl ? dl : RTLD_DEFAULT, sym);
	return h->table ? 0 : -ENOENT;
}

int hnet_init(struct hnet *h, uint64_t comm_id)
{
	struct nb_net_comm_config cfg = { -1 };
	const char *dbg = getenv("NCCLBPF_TEST_LOG");
	nb_net_logger_t log = dbg ? NULL : dummy_log;
	if (h->version == 10)
		return V10(h)->init(log, NULL);
	if (h->version == 11)
		return V11(h)->init(&h->ctx, comm_id, &cfg, log, NULL);
	return V12(h)->init(&h->ctx, comm_id, &cfg, log, NULL);
}

int hnet_finalize(struct hnet *h)
{
	if (h->version == 10)
		return 0;
	return h->version == 11 ? V11(h)->finalize(h->ctx) : V12(h)->finalize(h->ctx);
}

int hnet_devices(struct hnet *h, int *n)
{
	return DATA(h)->devices(n);
}

int hnet_props(struct hnet *h, int dev, struct nb_net_props_v12 *p)
{
	memset(p, 0, sizeof(*p));
	if (h->version == 12)
		return V12(h)->get_properties(dev, p);
	if (h->version == 11) {
		struct nb_net_props_v11 q;
		int rc = V11(h)->get_properties(dev, &q);
		memcpy(p, &q, offsetof(struct nb_net_props_v11, vprops));
		p->vprops.ndevs = q.vprops.ndevs;
		p->max_p2p_bytes = q.max_p2p_bytes;
		p->max_multi_request_size = q.max_multi_request_size;
		return rc;
	}
	struct nb_net_props_v10 q;
	int rc = V10(h)->get_properties(dev, &q);
	memcpy(p, &q, offsetof(struct nb_net_props_v10, vprops));
	p->vprops.ndevs = q.vprops.ndevs;
	p->max_p2p_bytes = q.max_p2p_bytes;
	return rc;
}

int hnet_listen(struct hnet *h, int dev, void *handle, void **lc)
{
	if (h->version == 10)
		return V10(h)->listen(dev, handle, lc);
	return h->version == 11 ? V11(h)->listen(h->ctx, dev, handle, lc)
				: V12(h)->listen(h->ctx, dev, handle, lc);
}

int hnet_connect_step(struct hnet *h, int dev, void *handle, void **sc)
{
	struct nb_net_device_handle *dh = NULL;
	struct nb_net_comm_config cfg = { -1 };
	if (h->version == 10)
		return V10(h)->connect(dev, &cfg, handle, sc, &dh);
	return h->version == 11 ? V11(h)->connect(h->ctx, dev, handle, sc, &dh)
				: V12(h)->connect(h->ctx, dev, handle, sc, &dh);
}

int hnet_accept_step(struct hnet *h, void *lc, void **rc)
{
	struct nb_net_device_handle *dh = NULL;
	return DATA(h)->accept(lc, rc, &dh);
}

int hnet_connect(struct hnet *h, int dev, void *handle, void **sc, int timeout_ms)
{
	uint64_t end = hnet_ms() + (uint64_t)timeout_ms;
	*sc = NULL;
	for (;;) {
		int rc = hnet_connect_step(h, dev, handle, sc);
		if (rc || *sc)
			return rc;
		if (hnet_ms() > end)
			return -ETIMEDOUT;
		sched_yield();
	}
}

int hnet_accept(struct hnet *h, void *lc, void **rc, int timeout_ms)
{
	uint64_t end = hnet_ms() + (uint64_t)timeout_ms;
	*rc = NULL;
	for (;;) {
		int r = hnet_accept_step(h, lc, rc);
		if (r || *rc)
			return r;
		if (hnet_ms() > end)
			return -ETIMEDOUT;
		sched_yield();
	}
}

int hnet_isend(struct hnet *h, void *sc, void *data, size_t size, int tag, void *mh, void **req)
{
	return DATA(h)->isend(sc, data, size, tag, mh, NULL, req);
}

int hnet_irecv(struct hnet *h, void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs,
	       void **req)
{
	return DATA(h)->irecv(rc, n, data, sizes, tags, mhs, NULL, req);
}

int hnet_test(struct hnet *h, void *req, int *done, int *sizes)
{
	return DATA(h)->test(req, done, sizes);
}

int hnet_wait(struct hnet *h, void *req, int *sizes, int timeout_ms)
{
	uint64_t end = hnet_ms() + (uint64_t)timeout_ms;
	unsigned spins = 0;
	for (;;) {
		int done = 0;
		int rc = hnet_test(h, req, &done, sizes);
		if (rc)
			return rc;
		if (done)
			return 0;
		if ((++spins & 1023) == 0) {
			if (hnet_ms() > end)
				return -ETIMEDOUT;
			sched_yield();
		}
	}
}

int hnet_reg(struct hnet *h, void *comm, void *data, size_t size, int type, void **mh)
{
	return DATA(h)->reg_mr(comm, data, size, type, mh);
}

int hnet_dereg(struct hnet *h, void *comm, void *mh)
{
	return DATA(h)->dereg_mr(comm, mh);
}

int hnet_close_send(struct hnet *h, void *c)
{
	return DATA(h)->close_send(c);
}

int hnet_close_recv(struct hnet *h, void *c)
{
	return DATA(h)->close_recv(c);
}

int hnet_close_listen(struct hnet *h, void *c)
{
	return DATA(h)->close_listen(c);
}

int hnet_send_msg(struct hnet *h, void *sc, void *data, size_t size, int tag, int timeout_ms)
{
	void *req = NULL;
	uint64_t end = hnet_ms() + (uint64_t)timeout_ms;
	while (!req) {
		int rc = hnet_isend(h, sc, data, size, tag, NULL, &req);
		if (rc)
			return rc;
		if (!req && hnet_ms() > end)
			return -ETIMEDOUT;
	}
	int sz = 0;
	return hnet_wait(h, req, &sz, timeout_ms);
}

int hnet_recv_msg(struct hnet *h, void *rc, void *data, size_t size, int tag, int *got,
		  int timeout_ms)
{
	void *req = NULL;
	uint64_t end = hnet_ms() + (uint64_t)timeout_ms;
	while (!req) {
		int r = hnet_irecv(h, rc, 1, &data, &size, &tag, NULL, &req);
		if (r)
			return r;
		if (!req && hnet_ms() > end)
			return -ETIMEDOUT;
	}
	return hnet_wait(h, req, got, timeout_ms);
}

int hnet_count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

void hnet_fill(void *p, size_t n, uint64_t seed)
{
	unsigned char *b = p;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = mix(seed + i);
		memcpy(b + i, &v, 8);
	}
	uint64_t v = mix(seed + i);
	memcpy(b + i, &v, n - i);
}

bool hnet_verify(const void *p, size_t n, uint64_t seed)
{
	const unsigned char *b = p;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = mix(seed + i);
		if (memcmp(b + i, &v, 8))
			return false;
	}
	uint64_t v = mix(seed + i);
	return memcmp(b + i, &v, n - i) == 0;
}

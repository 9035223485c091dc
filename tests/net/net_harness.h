/* Drives a net plugin table exactly as NCCL's proxy does: init per communicator (v11/v12)
 * or once (v10), listen, connect/accept called again until they return a comm, isend/irecv
 * that may return a NULL request (retry), test until done. One harness per table version. */
#ifndef NCCLBPF_TESTS_NET_HARNESS_H
#define NCCLBPF_TESTS_NET_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "plugin/net/nccl_net_abi.h"

struct hnet {
	int version; /* 10, 11, 12 */
	const void *table;
	void *ctx;   /* v11/v12 */
};

/* Resolves ncclNetPlugin_v<version> from a dlopen handle (NULL: this process). */
int hnet_open(struct hnet *h, void *dl, int version);
/* The tables of the statically linked plugin (tests linking ncclbpf_static). */
#ifdef HNET_STATIC
extern struct nb_net_v10 ncclNetPlugin_v10;
extern struct nb_net_v11 ncclNetPlugin_v11;
extern struct nb_net_v12 ncclNetPlugin_v12;
static inline int hnet_open_static(struct hnet *h, int version)
{
	h->version = version;
	h->ctx = NULL;
	h->table = version == 10 ? (const void *)&ncclNetPlugin_v10
		   : version == 11 ? (const void *)&ncclNetPlugin_v11 : (const void *)&ncclNetPlugin_v12;
	return 0;
}
#endif
int hnet_init(struct hnet *h, uint64_t comm_id);
int hnet_finalize(struct hnet *h);
int hnet_devices(struct hnet *h, int *n);
int hnet_props(struct hnet *h, int dev, struct nb_net_props_v12 *p);
int hnet_listen(struct hnet *h, int dev, void *handle, void **lc);
/* Loops connect (or accept) until a comm or an error; gives up after timeout_ms (-ETIMEDOUT). */
int hnet_connect(struct hnet *h, int dev, void *handle, void **sc, int timeout_ms);
int hnet_accept(struct hnet *h, void *lc, void **rc, int timeout_ms);
/* One accept/connect step (no loop). */
int hnet_connect_step(struct hnet *h, int dev, void *handle, void **sc);
int hnet_accept_step(struct hnet *h, void *lc, void **rc);
int hnet_isend(struct hnet *h, void *sc, void *data, size_t size, int tag, void *mh, void **req);
int hnet_irecv(struct hnet *h, void *rc, int n, void **data, size_t *sizes, int *tags, void **mhs,
	       void **req);
int hnet_test(struct hnet *h, void *req, int *done, int *sizes);
/* test until done; returns the plugin's error or -ETIMEDOUT */
int hnet_wait(struct hnet *h, void *req, int *sizes, int timeout_ms);
int hnet_reg(struct hnet *h, void *comm, void *data, size_t size, int type, void **mh);
int hnet_dereg(struct hnet *h, void *comm, void *mh);
int hnet_close_send(struct hnet *h, void *c);
int hnet_close_recv(struct hnet *h, void *c);
int hnet_close_listen(struct hnet *h, void *c);

/* Sends / receives one message, retrying NULL requests. */
int hnet_send_msg(struct hnet *h, void *sc, void *data, size_t size, int tag, int timeout_ms);
int hnet_recv_msg(struct hnet *h, void *rc, void *data, size_t size, int tag, int *got,
		  int timeout_ms);

uint64_t hnet_ms(void);
int hnet_count_fds(void);
void hnet_fill(void *p, size_t n, uint64_t seed);
bool hnet_verify(const void *p, size_t n, uint64_t seed);

#endif

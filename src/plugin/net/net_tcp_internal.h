/* Internals of the own TCP transport shared by net_tcp.c (data path, workers) and
 * net_tcp_setup.c (listen / connect / accept). */
#ifndef NCCLBPF_PLUGIN_NET_TCP_INTERNAL_H
#define NCCLBPF_PLUGIN_NET_TCP_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "plugin/net/nccl_net_abi.h"
#include "plugin/net/net_tcp.h"

#define TCP_MAX_PENDING 64
#define TCP_PENDING_TIMEOUT_NS (30ull * 1000000000ull)
#define TCP_RING_CAP (NB_NET_MAX_REQUESTS * TCP_MAX_RECVS * TCP_MAX_DATA_SOCKS)
#define TCP_COMM_MAGIC 0x54435043u

/* ---------------------------------------------------------------- comm structures */

struct tcp_comm;

struct tcp_req {
	struct tcp_comm *comm;
	struct tcp_req *next; /* posted-order queue */
	bool used, is_send;
	int n;
	char *data[TCP_MAX_RECVS];
	size_t size[TCP_MAX_RECVS]; /* send: message size; recv: slot capacity */
	size_t got[TCP_MAX_RECVS];  /* recv: message size received */
	int tag[TCP_MAX_RECVS];
	bool filled[TCP_MAX_RECVS]; /* recv: header matched */
	int n_filled;
	bool ctrl_done;             /* send: header (+inline payload) written; recv: all inline read */
	size_t ctrl_off;
	struct tcp_msg_header hdr;
	_Atomic int pending;        /* data-socket parts outstanding */
	_Atomic int error;          /* a part of this request failed (NB_NET_*) */
};

struct tcp_task {
	int fd;
	bool is_send;
	char *ptr;
	size_t len;
	struct tcp_req *req;
};

struct tcp_worker {
	struct tcp_comm *comm;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct tcp_task *ring;
	unsigned head, tail;
	bool stop, started;
};

struct tcp_comm {
	uint32_t magic;
	bool is_send;
	int dev;
	int ctrl_fd;
	int data_fd[TCP_MAX_DATA_SOCKS];
	int n_data, n_threads;
	uint32_t inline_max;
	_Atomic int error; /* first error (NB_NET_*), sticky */
	uint64_t large_count;
	struct tcp_req reqs[NB_NET_MAX_REQUESTS];
	struct tcp_req *q_head, *q_tail;
	/* recv control state */
	struct tcp_msg_header rhdr;
	size_t rhdr_off;
	struct tcp_req *rcur; /* inline payload being read */
	int rslot;
	size_t rpay_off;
	bool workers_started;
	struct tcp_worker workers[TCP_MAX_THREADS];
	/* connect stage */
	int n_socks_open;
	bool connecting[1 + TCP_MAX_DATA_SOCKS];
	size_t hello_off[1 + TCP_MAX_DATA_SOCKS];
	struct tcp_hello hello;
};

int tcp_set_blocking(int fd, bool blocking);
void tcp_set_nodelay(int fd);
uint64_t tcp_mono_ns(void);
uint64_t tcp_random_u64(void); /* never 0 */
struct tcp_comm *tcp_comm_new(bool is_send, int dev);
const struct tcp_iface *tcp_iface_get(int dev); /* NULL when out of range */

#endif

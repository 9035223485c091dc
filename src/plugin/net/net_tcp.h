/* The own TCP transport (mode "tcp"): host-memory buffers, one control socket plus up to
 * TCP_MAX_DATA_SOCKS data sockets per connection, served by per-connection worker threads.
 *
 * Wire protocol (both ends are ncclbpf; version 1):
 *  - The listener publishes a struct tcp_handle (address, port, a random listen nonce) in
 *    NCCL's 128-byte handle. Bytes 64..79 of the handle are the connector's own stage
 *    (pending-connection pointer + cookie), which NCCL keeps between connect calls.
 *  - The connector opens 1 + n_data sockets; each starts with a 32-byte struct tcp_hello
 *    (index 0 = control). accept groups sockets by conn_nonce and returns the receive comm
 *    once all of them arrived. Bad hellos are dropped without disturbing other connections.
 *  - Every isend writes a 16-byte struct tcp_msg_header on the control socket. A payload of
 *    at most `inline_max` bytes (or any payload when the connection has no data sockets)
 *    follows on the control socket; a larger one is split into at most n_data parts of at
 *    least TCP_MIN_PART bytes, striped over the data sockets starting at a per-connection
 *    rotating index (both ends count large messages, so they agree without a message).
 *  - The control socket is nonblocking and progressed by isend/irecv/test on NCCL's proxy
 *    thread; data sockets are blocking and owned by worker threads that sleep on a
 *    condition variable when idle.
 */
#ifndef NCCLBPF_PLUGIN_NET_TCP_H
#define NCCLBPF_PLUGIN_NET_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TCP_MAX_DEVS 16
#define TCP_MAX_DATA_SOCKS 16
#define TCP_MAX_THREADS 16
#define TCP_MAX_RECVS 8
#define TCP_MIN_PART (64u * 1024u)
#define TCP_HANDLE_MAGIC 0x4e425431u /* "NBT1" */
#define TCP_HELLO_MAGIC 0x4e424831u  /* "NBH1" */
#define TCP_MSG_MAGIC 0x4e424d31u    /* "NBM1" */
#define TCP_PROTO_VERSION 1
#define TCP_STAGE_OFFSET 64

struct tcp_handle {
	uint32_t magic;
	uint16_t family; /* AF_INET / AF_INET6 */
	uint16_t port;   /* network byte order */
	uint8_t addr[16];
	uint64_t listen_nonce;
};

struct tcp_hello {
	uint32_t magic;
	uint16_t version;
	uint16_t index;     /* 0 = control socket, 1..n_data = data sockets */
	uint16_t n_data;    /* data sockets of the connection (0..TCP_MAX_DATA_SOCKS) */
	uint16_t n_threads; /* connector's worker threads (informational) */
	uint32_t inline_max; /* payloads up to this size travel on the control socket */
	uint64_t listen_nonce;
	uint64_t conn_nonce;
};

struct tcp_msg_header {
	uint32_t magic;
	int32_t tag;
	uint64_t size;
};

/* Checks a hello received on a listening socket; 0 or -EPROTO with a reason. Pure (fuzzed). */
int tcp_hello_check(const struct tcp_hello *h, uint64_t listen_nonce, const char **why);
/* Checks a control-socket message header against the posted receive slots: returns the
 * slot index it fills, or -EPROTO (bad magic, no open slot with that tag) / -EMSGSIZE
 * (larger than the slot). Pure (fuzzed). */
int tcp_msg_match(const struct tcp_msg_header *h, int n, const int *tags,
		  const size_t *sizes, const bool *filled);

/* Connection options chosen at connect (policy or environment). */
struct tcp_conn_opts {
	int n_data;    /* 0..TCP_MAX_DATA_SOCKS */
	int n_threads; /* 1..TCP_MAX_THREADS (ignored when n_data == 0) */
};

/* Process configuration from the environment (read once): NCCLBPF_NET_NSOCKS,
 * NCCLBPF_NET_NTHREADS, NCCLBPF_NET_INLINE, NCCLBPF_NET_IFNAME / NCCL_SOCKET_IFNAME,
 * NCCL_SOCKET_FAMILY. */
struct tcp_config {
	int n_data, n_threads;
	uint32_t inline_max;
};
const struct tcp_config *tcp_config(void);

int tcp_init(void);
int tcp_devices(int *ndev);
struct nb_net_props_v12;
int tcp_get_properties(int dev, struct nb_net_props_v12 *props);
int tcp_listen(int dev, void *handle, void **listen_comm);
int tcp_connect(int dev, void *handle, const struct tcp_conn_opts *opts, void **send_comm);
int tcp_accept(void *listen_comm, void **recv_comm);
int tcp_reg_mr(void *comm, void *data, size_t size, int type, void **mh);
int tcp_dereg_mr(void *comm, void *mh);
int tcp_isend(void *send_comm, void *data, size_t size, int tag, void **req);
int tcp_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **req);
int tcp_test(void *req, int *done, int *sizes);
int tcp_close_send(void *send_comm);
int tcp_close_recv(void *recv_comm);
int tcp_close_listen(void *listen_comm);
/* The options a connection runs with (accept side: what the connector chose). */
void tcp_comm_opts(void *comm, struct tcp_conn_opts *out);

/* Interfaces (net_iface.c). */
struct tcp_iface {
	char name[64];
	int family;
	uint8_t addr[16]; /* in_addr / in6_addr */
	uint32_t scope_id;
};
/* Fills up to max interfaces chosen like NCCL's socket transport: spec (comma-separated
 * prefixes, "^" excludes, "=" exact) if non-NULL, else ib*, then anything but
 * docker/lo/virbr, then docker*, then lo*. family: 0 any, AF_INET, AF_INET6. */
int tcp_find_ifaces(const char *spec, int family, struct tcp_iface *out, int max);
/* True when ifname matches spec in NCCL_SOCKET_IFNAME semantics (pure; tested). */
bool tcp_iface_matches(const char *spec, const char *ifname);

#endif

/* libFuzzer target: hostile bytes on the TCP transport's listening port and control stream.
 * Input layout: byte 0 = number of connections (1..3); the rest is split evenly, one
 * chunk per connection, written to a raw socket connected to a real listener, then accept
 * is driven. A chunk that starts with the hello magic gets the listener's real nonce (so
 * the fuzzer can reach the connection-grouping and data paths). When accept returns a comm,
 * the bytes after the hello act as the control stream of a posted multi-receive.
 * Also feeds the pure checks (tcp_hello_check, tcp_msg_match) directly. */
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugin/net/nccl_net_abi.h"
#include "plugin/net/net_tcp.h"

static void *listener;
static char handle[NB_NET_HANDLE_MAXSIZE];

static int raw_connect(void)
{
	const struct tcp_handle *h = (const void *)handle;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = h->port };
	memcpy(&a.sin_addr, h->addr, 4);
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!listener) {
		signal(SIGPIPE, SIG_IGN);
		setenv("NCCL_SOCKET_IFNAME", "lo", 1);
		setenv("NCCLBPF_NET_INLINE", "64", 1);
		if (tcp_init() != 0 || tcp_listen(0, handle, &listener) != 0)
			abort();
	}
	const struct tcp_handle *th = (const void *)handle;
	if (size >= sizeof(struct tcp_hello)) {
		struct tcp_hello h;
		memcpy(&h, data, sizeof(h));
		const char *why;
		tcp_hello_check(&h, th->listen_nonce, &why);
	}
	if (size >= sizeof(struct tcp_msg_header) + 1) {
		struct tcp_msg_header m;
		memcpy(&m, data + 1, sizeof(m));
		int tags[3] = { data[0], data[0] + 1, -1 };
		size_t sizes[3] = { 10, 100000, 0 };
		bool filled[3] = { false, (data[0] & 1) != 0, false };
		tcp_msg_match(&m, 3, tags, sizes, filled);
	}
	if (size < 1)
		return 0;
	int nconn = 1 + data[0] % 3;
	size_t chunk = (size - 1) / (size_t)nconn;
	int fds[3] = { -1, -1, -1 };
	uint8_t *copy = malloc(size);
	memcpy(copy, data, size);
	for (int i = 0; i < nconn; i++) {
		uint8_t *p = copy + 1 + (size_t)i * chunk;
		if (chunk >= sizeof(struct tcp_hello)) {
			struct tcp_hello h;
			memcpy(&h, p, sizeof(h));
			if (h.magic == TCP_HELLO_MAGIC) {
				h.listen_nonce = th->listen_nonce;
				memcpy(p, &h, sizeof(h));
			}
		}
		fds[i] = raw_connect();
		if (fds[i] >= 0 && chunk)
			(void)!send(fds[i], p, chunk, MSG_NOSIGNAL | MSG_DONTWAIT);
	}
	for (int i = 0; i < nconn; i++)
		if (fds[i] >= 0)
			shutdown(fds[i], SHUT_WR);
	void *rc = NULL;
	for (int k = 0; k < 8 && !rc; k++)
		tcp_accept(listener, &rc);
	if (rc) {
		static char bufs[3][256];
		void *d[3] = { bufs[0], bufs[1], bufs[2] };
		size_t sz[3] = { 256, 256, 16 };
		int tags[3] = { 0, 1, 2 };
		void *req = NULL;
		if (tcp_irecv(rc, 3, d, sz, tags, &req) == 0 && req) {
			int done = 0, sizes[3];
			for (int k = 0; k < 16 && !done; k++)
				if (tcp_test(req, &done, sizes) != 0)
					break;
		}
		tcp_close_recv(rc);
	}
	for (int i = 0; i < nconn; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	/* drain pending sockets the listener still holds (their peers closed) */
	for (int k = 0; k < 4; k++) {
		void *extra = NULL;
		tcp_accept(listener, &extra);
		if (extra)
			tcp_close_recv(extra);
	}
	free(copy);
	return 0;
}

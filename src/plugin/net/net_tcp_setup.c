/* The own TCP transport's connection setup: listen, the nonblocking connect state machine
 * (its stage lives in NCCL's handle) and accept, which groups incoming sockets by
 * connection and drops anything that is not a valid hello. Protocol: net_tcp.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugin/net/net_log.h"
#include "plugin/net/net_tcp_internal.h"

#define LOGN (NET_SUBSYS_NET)

/* ---------------------------------------------------------------- listen / connect */

struct tcp_pending {
	int fd;
	size_t off;
	uint64_t since;
	struct tcp_hello hello;
};

struct tcp_group {
	bool used;
	uint64_t conn_nonce, since;
	struct tcp_hello first;
	int fds[1 + TCP_MAX_DATA_SOCKS];
	int got;
};

struct tcp_listen {
	uint32_t magic;
	int dev;
	int fd;
	uint64_t nonce;
	struct tcp_pending pending[TCP_MAX_PENDING];
	int n_pending;
	struct tcp_group groups[TCP_MAX_PENDING];
	uint64_t dropped;
};
#define TCP_LISTEN_MAGIC 0x5443504cu

static socklen_t make_addr(int family, const uint8_t *addr, uint16_t port_be, uint32_t scope,
			   struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;
		s->sin_family = AF_INET;
		s->sin_port = port_be;
		memcpy(&s->sin_addr, addr, 4);
		return sizeof(*s);
	}
	struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;
	s->sin6_family = AF_INET6;
	s->sin6_port = port_be;
	s->sin6_scope_id = scope;
	memcpy(&s->sin6_addr, addr, 16);
	return sizeof(*s);
}

int tcp_listen(int dev, void *handle, void **listen_comm)
{
	const struct tcp_iface *f = tcp_iface_get(dev);
	if (!handle || !listen_comm || !f)
		return NB_NET_INVALID_ARGUMENT;
	*listen_comm = NULL;
	struct sockaddr_storage ss;
	socklen_t len = make_addr(f->family, f->addr, 0, f->scope_id, &ss);
	int fd = socket(f->family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto fail;
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 512) < 0 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		goto fail;
	struct tcp_listen *l = calloc(1, sizeof(*l));
	if (!l) {
		close(fd);
		return NB_NET_SYSTEM_ERROR;
	}
	l->magic = TCP_LISTEN_MAGIC;
	l->dev = dev;
	l->fd = fd;
	l->nonce = tcp_random_u64();
	struct tcp_handle h = { TCP_HANDLE_MAGIC, (uint16_t)f->family, 0, { 0 }, l->nonce };
	memcpy(h.addr, f->addr, 16);
	h.port = f->family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
				      : ((struct sockaddr_in6 *)&ss)->sin6_port;
	memset(handle, 0, NB_NET_HANDLE_MAXSIZE);
	memcpy(handle, &h, sizeof(h));
	*listen_comm = l;
	return NB_NET_SUCCESS;
fail:
	net_log(NET_WARN, LOGN, "net: listen on %s: %s", f->name, strerror(errno));
	if (fd >= 0)
		close(fd);
	return NB_NET_SYSTEM_ERROR;
}

/* NCCL keeps the handle between connect calls: the pending comm lives in its stage area. */
struct tcp_stage {
	uint64_t cookie;
	struct tcp_comm *comm;
};
#define TCP_STAGE_COOKIE 0x5354414745ull

static void close_fds(struct tcp_comm *c)
{
	if (c->ctrl_fd >= 0)
		close(c->ctrl_fd);
	for (int i = 0; i < c->n_data; i++)
		if (c->data_fd[i] >= 0)
			close(c->data_fd[i]);
}

int tcp_connect(int dev, void *handle, const struct tcp_conn_opts *opts, void **send_comm)
{
	if (!handle || !send_comm)
		return NB_NET_INVALID_ARGUMENT;
	*send_comm = NULL;
	struct tcp_handle h;
	struct tcp_stage st;
	memcpy(&h, handle, sizeof(h));
	memcpy(&st, (char *)handle + TCP_STAGE_OFFSET, sizeof(st));
	struct tcp_comm *c = st.cookie == TCP_STAGE_COOKIE ? st.comm : NULL;
	if (!c) {
		if (h.magic != TCP_HANDLE_MAGIC || (h.family != AF_INET && h.family != AF_INET6)) {
			net_log(NET_WARN, LOGN, "net: connect: the handle is not from an ncclbpf tcp listener");
			return NB_NET_INVALID_ARGUMENT;
		}
		c = tcp_comm_new(true, dev);
		if (!c)
			return NB_NET_SYSTEM_ERROR;
		int nd = opts ? opts->n_data : tcp_config()->n_data;
		int nt = opts ? opts->n_threads : tcp_config()->n_threads;
		c->n_data = nd < 0 ? 0 : nd > TCP_MAX_DATA_SOCKS ? TCP_MAX_DATA_SOCKS : nd;
		c->n_threads = nt < 1 ? 1 : nt > TCP_MAX_THREADS ? TCP_MAX_THREADS : nt;
		if (c->n_threads > c->n_data && c->n_data > 0)
			c->n_threads = c->n_data;
		c->inline_max = tcp_config()->inline_max;
		c->hello = (struct tcp_hello){ TCP_HELLO_MAGIC, TCP_PROTO_VERSION, 0,
					       (uint16_t)c->n_data, (uint16_t)c->n_threads,
					       c->inline_max, h.listen_nonce, tcp_random_u64() };
		struct sockaddr_storage ss;
		uint32_t scope = tcp_iface_get(dev) ? tcp_iface_get(dev)->scope_id : 0;
		socklen_t len = make_addr(h.family, h.addr, h.port, scope, &ss);
		for (int i = 0; i <= c->n_data; i++) {
			int fd = socket(h.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (fd < 0) {
				net_log(NET_WARN, LOGN, "net: connect: socket: %s", strerror(errno));
				close_fds(c);
				free(c);
				return NB_NET_SYSTEM_ERROR;
			}
			if (i == 0)
				c->ctrl_fd = fd;
			else
				c->data_fd[i - 1] = fd;
			tcp_set_nodelay(fd);
			if (connect(fd, (struct sockaddr *)&ss, len) < 0 && errno != EINPROGRESS) {
				net_log(NET_WARN, LOGN, "net: connect: %s", strerror(errno));
				close_fds(c);
				free(c);
				return NB_NET_REMOTE_ERROR;
			}
			c->connecting[i] = true;
		}
		st = (struct tcp_stage){ TCP_STAGE_COOKIE, c };
		memcpy((char *)handle + TCP_STAGE_OFFSET, &st, sizeof(st));
	}
	/* progress every socket without blocking */
	bool all = true;
	for (int i = 0; i <= c->n_data; i++) {
		int fd = i == 0 ? c->ctrl_fd : c->data_fd[i - 1];
		if (c->connecting[i]) {
			struct pollfd p = { fd, POLLOUT, 0 };
			if (poll(&p, 1, 0) <= 0) {
				all = false;
				continue;
			}
			int err = 0;
			socklen_t el = sizeof(err);
			getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
			if (err) {
				net_log(NET_WARN, LOGN, "net: connect: %s", strerror(err));
				goto fail;
			}
			c->connecting[i] = false;
		}
		struct tcp_hello hello = c->hello;
		hello.index = (uint16_t)i;
		while (c->hello_off[i] < sizeof(hello)) {
			ssize_t w = send(fd, (char *)&hello + c->hello_off[i],
					 sizeof(hello) - c->hello_off[i], MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0) {
				c->hello_off[i] += (size_t)w;
				continue;
			}
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				break;
			net_log(NET_WARN, LOGN, "net: connect: hello: %s", w < 0 ? strerror(errno) : "closed");
			goto fail;
		}
		if (c->hello_off[i] < sizeof(hello))
			all = false;
	}
	if (!all)
		return NB_NET_SUCCESS;
	for (int i = 0; i < c->n_data; i++)
		tcp_set_blocking(c->data_fd[i], true);
	memset((char *)handle + TCP_STAGE_OFFSET, 0, sizeof(st));
	*send_comm = c;
	return NB_NET_SUCCESS;
fail:
	memset((char *)handle + TCP_STAGE_OFFSET, 0, sizeof(st));
	close_fds(c);
	free(c);
	return NB_NET_REMOTE_ERROR;
}

static void pending_drop(struct tcp_listen *l, int i, const char *why)
{
	l->dropped++;
	if (l->dropped <= 10)
		net_log(NET_WARN, LOGN, "net: dropped an incoming connection on dev %d: %s", l->dev, why);
	close(l->pending[i].fd);
	l->pending[i] = l->pending[--l->n_pending];
}

static void group_drop(struct tcp_group *g)
{
	for (int i = 0; i <= g->first.n_data; i++)
		if (g->fds[i] >= 0)
			close(g->fds[i]);
	g->used = false;
}

/* Files a socket with a valid hello into its connection group; returns the complete group
 * or NULL. */
static struct tcp_group *group_add(struct tcp_listen *l, const struct tcp_hello *h, int fd,
				   uint64_t now)
{
	struct tcp_group *g = NULL, *free_g = NULL;
	for (int i = 0; i < TCP_MAX_PENDING; i++) {
		if (l->groups[i].used && l->groups[i].conn_nonce == h->conn_nonce)
			g = &l->groups[i];
		else if (!l->groups[i].used && !free_g)
			free_g = &l->groups[i];
	}
	if (!g) {
		if (!free_g) {
			close(fd);
			return NULL;
		}
		g = free_g;
		memset(g, 0, sizeof(*g));
		g->used = true;
		g->conn_nonce = h->conn_nonce;
		g->since = now;
		g->first = *h;
		for (int i = 0; i < 1 + TCP_MAX_DATA_SOCKS; i++)
			g->fds[i] = -1;
	}
	if (h->n_data != g->first.n_data || h->inline_max != g->first.inline_max ||
	    g->fds[h->index] >= 0) {
		net_log(NET_WARN, LOGN, "net: inconsistent or duplicate socket for a connection, dropped");
		close(fd);
		return NULL;
	}
	g->fds[h->index] = fd;
	return ++g->got == 1 + g->first.n_data ? g : NULL;
}

int tcp_accept(void *listen_comm, void **recv_comm)
{
	struct tcp_listen *l = listen_comm;
	if (!l || l->magic != TCP_LISTEN_MAGIC || !recv_comm)
		return NB_NET_INVALID_ARGUMENT;
	*recv_comm = NULL;
	uint64_t now = tcp_mono_ns();
	for (int k = 0; k < TCP_MAX_PENDING; k++) {
		int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			break;
		if (l->n_pending == TCP_MAX_PENDING) {
			/* the oldest pending socket makes room: a flood cannot block real peers */
			pending_drop(l, 0, "too many connections without a hello");
		}
		l->pending[l->n_pending++] = (struct tcp_pending){ fd, 0, now, { 0 } };
	}
	for (int i = 0; i < l->n_pending;) {
		struct tcp_pending *p = &l->pending[i];
		ssize_t n = recv(p->fd, (char *)&p->hello + p->off, sizeof(p->hello) - p->off,
				 MSG_DONTWAIT);
		if (n > 0)
			p->off += (size_t)n;
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
			pending_drop(l, i, "closed before its hello");
			continue;
		}
		if (p->off < sizeof(p->hello)) {
			if (now - p->since > TCP_PENDING_TIMEOUT_NS)
				pending_drop(l, i, "no hello within 30 s");
			else
				i++;
			continue;
		}
		const char *why = NULL;
		if (tcp_hello_check(&p->hello, l->nonce, &why) < 0) {
			pending_drop(l, i, why);
			continue;
		}
		struct tcp_hello h = p->hello;
		int fd = p->fd;
		l->pending[i] = l->pending[--l->n_pending];
		struct tcp_group *g = group_add(l, &h, fd, now);
		if (!g)
			continue;
		struct tcp_comm *c = tcp_comm_new(false, l->dev);
		if (!c) {
			group_drop(g);
			return NB_NET_SYSTEM_ERROR;
		}
		c->n_data = g->first.n_data;
		c->n_threads = g->first.n_threads > c->n_data && c->n_data ? c->n_data : g->first.n_threads;
		c->inline_max = g->first.inline_max;
		c->ctrl_fd = g->fds[0];
		tcp_set_nodelay(c->ctrl_fd);
		for (int s = 0; s < c->n_data; s++) {
			c->data_fd[s] = g->fds[s + 1];
			tcp_set_blocking(c->data_fd[s], true);
			tcp_set_nodelay(c->data_fd[s]);
		}
		g->used = false;
		*recv_comm = c;
		return NB_NET_SUCCESS;
	}
	for (int i = 0; i < TCP_MAX_PENDING; i++)
		if (l->groups[i].used && now - l->groups[i].since > 2 * TCP_PENDING_TIMEOUT_NS)
			group_drop(&l->groups[i]);
	return NB_NET_SUCCESS;
}

int tcp_close_listen(void *listen_comm)
{
	struct tcp_listen *l = listen_comm;
	if (!l || l->magic != TCP_LISTEN_MAGIC)
		return NB_NET_INVALID_ARGUMENT;
	for (int i = 0; i < l->n_pending; i++)
		close(l->pending[i].fd);
	for (int i = 0; i < TCP_MAX_PENDING; i++)
		if (l->groups[i].used)
			group_drop(&l->groups[i]);
	close(l->fd);
	l->magic = 0;
	free(l);
	return NB_NET_SUCCESS;
}

/* The control socket's connections, multiplexed on the service thread (control.c).
 *
 * Bounds (docs/control.md "Limits"): at most CONN_MAX connections at once; a request must
 * arrive whole within REQUEST_DEADLINE_MS of its accept, and its reply must be taken within
 * REPLY_DEADLINE_MS (deadlines per request, not per read: a client that sends a byte now
 * and then is cut all the same); a request is at most NBC_MAX_REQUEST bytes, allocated only
 * once its header passed the checks, after the peer's uid did. A new connection when all
 * slots are taken evicts the oldest one still sending its request. Every socket is
 * non-blocking: one stalled or slow client never holds up another's request.
 *
 * At the process's descriptor limit (EMFILE), accept would fail forever and the listening
 * socket stay readable (a busy loop): one descriptor is kept in reserve (/dev/null) and
 * released to accept a waiting client, then taken back when that connection closes; without
 * it, the listening socket is left alone for ACCEPT_BACKOFF_MS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "runtime/control_internal.h"
#include "runtime/runtime.h"

#define CONN_MAX CONTROL_IO_MAX_CONNS
#define REQUEST_DEADLINE_MS 5000
#define REPLY_DEADLINE_MS 5000
#define ACCEPT_BACKOFF_MS 100
#define ACCEPT_BURST 64 /* accepts per pass, then the open connections get their turn */

enum conn_state { CONN_FREE, CONN_READ, CONN_WRITE };

struct conn {
	enum conn_state st;
	int fd;
	uint64_t accepted_ns, deadline_ns;
	uint8_t hdr[NBC_HEADER_SIZE];
	size_t hdr_got;
	struct nbc_header h;
	uint8_t *payload;
	size_t pay_got;
	/* reply: header, then body */
	uint8_t out_hdr[NBC_HEADER_SIZE];
	struct ctl_buf body;
	size_t out_put;
};

static struct conn conns[CONN_MAX];
static int reserve_fd = -1;
static uint64_t listen_paused_until;
static struct control_io_stats stats;
static struct runtime_ratelimit refuse_limit;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void take_reserve(void)
{
	if (reserve_fd < 0)
		reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

void control_io_start(void)
{
	take_reserve();
	listen_paused_until = 0;
}

static void conn_close(struct conn *c)
{
	if (c->st == CONN_FREE)
		return;
	close(c->fd);
	free(c->payload);
	free(c->body.p);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	take_reserve(); /* the descriptor just freed, if the reserve was spent */
}

void control_io_forget(void)
{
	/* a forked child: the table is the parent's (its descriptors close at exec) */
	memset(conns, 0, sizeof(conns));
	for (int i = 0; i < CONN_MAX; i++)
		conns[i].fd = -1;
}

void control_io_stop(void)
{
	for (int i = 0; i < CONN_MAX; i++)
		conn_close(&conns[i]);
	if (reserve_fd >= 0)
		close(reserve_fd);
	reserve_fd = -1;
}

void control_io_stats(struct control_io_stats *out)
{
	*out = stats;
	out->open = 0;
	for (int i = 0; i < CONN_MAX; i++)
		out->open += conns[i].st != CONN_FREE;
}

/* ---- replies ---- */

/* One non-blocking try at a short error reply (the socket's buffer is empty), for a peer
 * that is closed right after: nothing of ours stays allocated for it. */
static void send_error_now(int fd, uint8_t op, int status, const char *msg)
{
	uint8_t buf[NBC_HEADER_SIZE + 256];
	int len = snprintf((char *)buf + NBC_HEADER_SIZE, sizeof(buf) - NBC_HEADER_SIZE, "%s\n", msg);
	if (len < 0 || (size_t)len >= sizeof(buf) - NBC_HEADER_SIZE)
		len = 0;
	struct nbc_header h = {NBC_MAGIC, NBC_VERSION, op, 0, (uint32_t)len, status};
	nbc_header_encode(&h, buf);
	if (send(fd, buf, NBC_HEADER_SIZE + (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) {
		/* the peer is gone or not reading: it is closed all the same */
	}
}

static void start_reply(struct conn *c, uint8_t op, int status, struct ctl_buf *body)
{
	struct nbc_header h = {NBC_MAGIC, NBC_VERSION, op, 0, (uint32_t)body->len, status};
	nbc_header_encode(&h, c->out_hdr);
	free(c->payload);
	c->payload = NULL;
	c->body = *body;
	c->out_put = 0;
	c->st = CONN_WRITE;
	c->deadline_ns = now_ns() + REPLY_DEADLINE_MS * 1000000ull;
}

static void start_error(struct conn *c, uint8_t op, int status, const char *msg)
{
	struct ctl_buf b = {0};
	cb_printf(&b, "%s\n", msg);
	start_reply(c, op, status, &b);
}

/* Sends what the socket takes now; closes the connection when done or failed. */
static void conn_write(struct conn *c)
{
	for (;;) {
		size_t total = NBC_HEADER_SIZE + c->body.len;
		if (c->out_put >= total) {
			stats.served++;
			conn_close(c);
			return;
		}
		const uint8_t *p = c->out_put < NBC_HEADER_SIZE
					   ? c->out_hdr + c->out_put
					   : (const uint8_t *)c->body.p + (c->out_put - NBC_HEADER_SIZE);
		size_t n = c->out_put < NBC_HEADER_SIZE ? NBC_HEADER_SIZE - c->out_put
						       : total - c->out_put;
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return; /* POLLOUT later */
		if (w <= 0) {
			conn_close(c); /* the client went away */
			return;
		}
		c->out_put += (size_t)w;
	}
}

/* Runs the complete request in c->payload and starts its reply. */
static void conn_handle(struct conn *c)
{
	char err[256];
	struct nbc_request req;
	int rc = nbc_parse_request(&c->h, c->payload, c->h.len, &req, err, sizeof(err));
	if (rc) {
		start_error(c, c->h.op, rc, err);
		return;
	}
	struct ctl_buf out = {0};
	rc = control_handle(&req, &out);
	if (rc < 0 && (req.flags & NBC_FLAG_JSON) && (!out.p || out.p[0] != '{')) {
		/* handlers answer errors in text: keep --json output parseable */
		struct ctl_buf j = {0};
		while (out.len && out.p[out.len - 1] == '\n')
			out.p[--out.len] = '\0';
		cb_printf(&j, "{\"schema\":\"ncclbpf.ctl.error/1\",\"ok\":false,\"status\":%d,"
			  "\"message\":", rc);
		cb_json_str(&j, out.p ? out.p : "");
		cb_printf(&j, "}\n");
		free(out.p);
		out = j;
	}
	if (out.truncated)
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control: %s reply truncated at %u bytes",
			    nbc_op_name(req.op), NBC_MAX_REPLY);
	start_reply(c, req.op, rc, &out);
}

/* Reads what has arrived; a complete request is handled and its reply started. */
static void conn_read(struct conn *c)
{
	char err[256];
	for (;;) {
		uint8_t *dst;
		size_t want;
		if (c->hdr_got < NBC_HEADER_SIZE) {
			dst = c->hdr + c->hdr_got;
			want = NBC_HEADER_SIZE - c->hdr_got;
		} else {
			dst = c->payload + c->pay_got;
			want = c->h.len - c->pay_got;
		}
		ssize_t n = want ? recv(c->fd, dst, want, MSG_DONTWAIT) : 0;
		if (want && n < 0 && errno == EINTR)
			continue;
		if (want && n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (want && n <= 0) {
			if (n == 0 && c->hdr_got == NBC_HEADER_SIZE)
				start_error(c, c->h.op, -EINVAL, "truncated request");
			else
				conn_close(c); /* nothing complete to answer */
			if (c->st == CONN_WRITE)
				conn_write(c);
			return;
		}
		if (c->hdr_got < NBC_HEADER_SIZE) {
			c->hdr_got += (size_t)n;
			if (c->hdr_got < NBC_HEADER_SIZE)
				continue;
			nbc_header_decode(c->hdr, &c->h);
			int rc = nbc_check_request_header(&c->h, err, sizeof(err));
			if (rc) {
				start_error(c, c->h.op, rc, err);
				conn_write(c);
				return;
			}
			/* bounded by the header check (NBC_MAX_REQUEST), after the uid check */
			c->payload = malloc(c->h.len ? c->h.len : 1);
			if (!c->payload) {
				start_error(c, c->h.op, -ENOMEM, "out of memory");
				conn_write(c);
				return;
			}
		} else {
			c->pay_got += (size_t)n;
		}
		if (c->hdr_got == NBC_HEADER_SIZE && c->pay_got == c->h.len) {
			conn_handle(c);
			conn_write(c);
			return;
		}
	}
}

/* ---- accepting ---- */

static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char msg[160];
	const char *why = msg;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cl != sizeof(cred)) {
		why = "cannot read the peer's credentials: refused";
	} else if (cred.uid == geteuid() || cred.uid == 0) {
		return true;
	} else {
		if (runtime_ratelimit_ok(&refuse_limit, 5))
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "control: refused a request from uid %u (pid %d): only uid %u and "
				    "root may control this process", (unsigned)cred.uid, (int)cred.pid,
				    (unsigned)geteuid());
		snprintf(msg, sizeof(msg), "permission denied: uid %u may not control pid %d",
			 (unsigned)cred.uid, (int)getpid());
	}
	send_error_now(fd, 0, -EPERM, why);
	stats.refused++;
	return false;
}

/* A slot for a new connection: a free one, else the oldest still sending its request
 * (evicted), else the oldest of all. */
static struct conn *free_slot(void)
{
	struct conn *oldest_read = NULL, *oldest = NULL;
	for (int i = 0; i < CONN_MAX; i++) {
		struct conn *c = &conns[i];
		if (c->st == CONN_FREE)
			return c;
		if (c->st == CONN_READ && (!oldest_read || c->accepted_ns < oldest_read->accepted_ns))
			oldest_read = c;
		if (!oldest || c->accepted_ns < oldest->accepted_ns)
			oldest = c;
	}
	struct conn *v = oldest_read ? oldest_read : oldest;
	conn_close(v);
	stats.evicted++;
	return v;
}

static int accept_one(int listen_fd)
{
	int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
		stats.emfile++;
		if (reserve_fd < 0)
			return -EMFILE;
		close(reserve_fd); /* taken back when a connection closes */
		reserve_fd = -1;
		fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0 && (errno == EMFILE || errno == ENFILE)) {
			take_reserve();
			return -EMFILE; /* another thread took it first */
		}
	}
	if (fd < 0)
		return -errno;
	return fd;
}

void control_io_accept(int listen_fd)
{
	for (int k = 0; k < ACCEPT_BURST; k++) {
		int fd = accept_one(listen_fd);
		if (fd == -EMFILE) {
			listen_paused_until = now_ns() + ACCEPT_BACKOFF_MS * 1000000ull;
			return;
		}
		if (fd == -EINTR || fd == -ECONNABORTED)
			continue;
		if (fd < 0)
			return; /* EAGAIN: none waiting */
		if (!peer_allowed(fd)) {
			close(fd);
			take_reserve();
			continue;
		}
		struct conn *c = free_slot();
		c->st = CONN_READ;
		c->fd = fd;
		c->accepted_ns = now_ns();
		c->deadline_ns = c->accepted_ns + REQUEST_DEADLINE_MS * 1000000ull;
		stats.accepted++;
		conn_read(c); /* a client sends its request with the connect: serve it now */
	}
}

/* ---- the poll set ---- */

int control_io_pollfds(struct pollfd *p, int max, int *timeout_ms)
{
	uint64_t now = now_ns(), next = 0;
	int n = 0;
	for (int i = 0; i < CONN_MAX && n < max; i++) {
		struct conn *c = &conns[i];
		if (c->st == CONN_FREE)
			continue;
		p[n++] = (struct pollfd){c->fd, c->st == CONN_READ ? POLLIN : POLLOUT, 0};
		if (!next || c->deadline_ns < next)
			next = c->deadline_ns;
	}
	if (listen_paused_until > now && (!next || listen_paused_until < next))
		next = listen_paused_until;
	if (next) {
		uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;
		if (*timeout_ms < 0 || ms < (uint64_t)*timeout_ms)
			*timeout_ms = (int)ms;
	}
	return n;
}

bool control_io_listen_paused(void)
{
	return listen_paused_until && now_ns() < listen_paused_until;
}

void control_io_events(const struct pollfd *p, int n)
{
	for (int k = 0; k < n; k++) {
		if (!p[k].revents)
			continue;
		for (int i = 0; i < CONN_MAX; i++) {
			struct conn *c = &conns[i];
			if (c->st == CONN_FREE || c->fd != p[k].fd)
				continue;
			if (c->st == CONN_READ)
				conn_read(c);
			else
				conn_write(c);
			break;
		}
	}
	uint64_t now = now_ns();
	for (int i = 0; i < CONN_MAX; i++) {
		struct conn *c = &conns[i];
		if (c->st == CONN_FREE || now < c->deadline_ns)
			continue;
		stats.timed_out++;
		if (c->st == CONN_READ)
			send_error_now(c->fd, c->hdr_got == NBC_HEADER_SIZE ? c->h.op : 0, -ETIMEDOUT,
				       "request not complete within 5 s of connecting: connection "
				       "closed");
		conn_close(c);
	}
}

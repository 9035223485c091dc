#define _GNU_SOURCE /* accept4 */
/* agree: the one service thread per process. It owns every socket: the process's listener
 * (the rendezvous port when this process could bind it - the hub - else an ephemeral
 * port), the connection to the hub, the follower links and the leader's accepted peers.
 * Sockets are non-blocking; output is queued per connection and flushed on POLLOUT, so a
 * slow peer never stalls the thread. The hub keeps a directory comm -> leader address. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agree/agree_internal.h"
#include "runtime/runtime.h"

#define MAX_CONNS 4096
#define HUB_DIR_MAX 4096

enum conn_kind { CONN_PEER = 1, CONN_HUB, CONN_LINK };

struct conn {
	int fd;
	enum conn_kind kind;
	bool connecting;
	struct agree_buf in, out;
	size_t out_off;
	struct agree_comm *link_owner; /* CONN_LINK: the follower comm */
};

struct hub_entry {
	uint64_t comm_id, token;
	uint32_t rank;  /* 0: the leader; a relay's rank in tree mode (agree_tree.c) */
	uint32_t addr; /* network order; 0 = this process (the hub) */
	uint32_t port;
	int fd;        /* registering connection, -1 for local */
};

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static pthread_t service_thread;
static bool service_running;
static _Atomic bool service_stop;
static int wake_fd = -1;
static int listen_fd = -1;
static uint16_t listen_port;
static bool is_hub;
static uint32_t hub_addr; /* network order */
static int hub_fd = -1;
static uint64_t hub_retry_ns;
static struct conn *conns[MAX_CONNS];
static struct hub_entry hub_dir[HUB_DIR_MAX];
static size_t hub_dir_cnt;
static struct agree_stats stats;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;

void agree_stat_add(size_t off, uint64_t v)
{
	__atomic_fetch_add((uint64_t *)((char *)&stats + off), v, __ATOMIC_RELAXED);
}

void agree_stat_max(size_t off, uint64_t v)
{
	uint64_t *p = (uint64_t *)((char *)&stats + off);
	uint64_t cur = __atomic_load_n(p, __ATOMIC_RELAXED);
	while (v > cur && !__atomic_compare_exchange_n(p, &cur, v, true, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

void agree_get_stats(struct agree_stats *out)
{
	pthread_mutex_lock(&stats_lock);
	for (size_t o = 0; o < sizeof(*out); o += 8)
		*(uint64_t *)((char *)out + o) = __atomic_load_n((uint64_t *)((char *)&stats + o),
								 __ATOMIC_RELAXED);
	pthread_mutex_unlock(&stats_lock);
}

bool agree_is_hub(void) { return is_hub; }
uint16_t agree_listen_port(void) { return listen_port; }

void agree_service_wake(void)
{
	if (wake_fd >= 0) {
		uint64_t one = 1;
		ssize_t r = write(wake_fd, &one, sizeof(one));
		(void)r; /* EAGAIN: a wake-up is already pending */
	}
}

/* ---- connections ---- */

static struct conn *conn_of(int fd)
{
	return fd >= 0 && fd < MAX_CONNS ? conns[fd] : NULL;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static struct conn *conn_add(int fd, enum conn_kind kind)
{
	if (fd < 0 || fd >= MAX_CONNS) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->kind = kind;
	conns[fd] = c;
	return c;
}

bool agree_conn_register(int fd, struct agree_comm *owner)
{
	struct conn *c = conn_add(fd, CONN_LINK); /* closes fd on failure */
	if (!c)
		return false;
	c->connecting = true;
	c->link_owner = owner;
	return true;
}

static void conn_drop(struct conn *c, bool notify)
{
	int fd = c->fd;
	conns[fd] = NULL;
	if (notify) {
		if (c->kind == CONN_LINK && c->link_owner)
			agree_group_on_close(c->link_owner, fd);
		else if (c->kind == CONN_PEER) {
			agree_registry_lock();
			for (size_t i = 0; i < AGREE_MAX_COMMS; i++) {
				struct agree_comm *ac = agree_registry_at(i);
				if (ac && (ac->role == AGREE_ROLE_LEADER || ac->relay))
					agree_group_on_close(ac, fd);
			}
			agree_registry_unlock();
			for (size_t i = 0; i < hub_dir_cnt; i++)
				if (hub_dir[i].fd == fd)
					hub_dir[i--] = hub_dir[--hub_dir_cnt];
		} else if (c->kind == CONN_HUB) {
			hub_fd = -1;
		}
	}
	agree_buf_free(&c->in);
	agree_buf_free(&c->out);
	free(c);
	close(fd);
}

static void conn_flush(struct conn *c);
static void conn_drop(struct conn *c, bool notify);

void agree_conn_flush_close(int fd)
{
	struct conn *c = conn_of(fd);
	if (!c)
		return;
	uint64_t until = agree_now_ns() + 100000000ull;
	while (c->out_off < c->out.len && !c->connecting && agree_now_ns() < until) {
		struct pollfd p = {.fd = fd, .events = POLLOUT};
		poll(&p, 1, 10);
		conn_flush(c);
	}
	shutdown(fd, SHUT_WR);
	conn_drop(c, false);
}

void agree_conn_close(int fd)
{
	struct conn *c = conn_of(fd);
	if (c)
		conn_drop(c, false);
}

static void conn_flush(struct conn *c)
{
	while (c->out_off < c->out.len && !c->connecting) {
		ssize_t n = send(c->fd, c->out.p + c->out_off, c->out.len - c->out_off, MSG_NOSIGNAL);
		if (n <= 0)
			break;
		c->out_off += (size_t)n;
		AGREE_STAT(bytes_sent, (uint64_t)n);
	}
	if (c->out_off == c->out.len) {
		c->out.len = 0;
		c->out_off = 0;
	}
}

int agree_conn_send(int fd, const struct agree_buf *b)
{
	struct conn *c = conn_of(fd);
	if (!c || b->oom)
		return -EPIPE;
	if (c->out.len - c->out_off > (64u << 20)) {
		/* a peer that stopped reading: drop it rather than queue without bound (for the
		 * group it is a lost member, with the usual fallback point) */
		conn_drop(c, true);
		return -ENOBUFS;
	}
	agree_buf_put(&c->out, b->p, b->len);
	if (c->out.oom)
		return -ENOMEM;
	/* sent at the end of this loop iteration (flush_all): frames for one peer produced in
	 * the same iteration (a COMMIT and the next DATA, a hub reply) share one send() */
	return 0;
}

int agree_conn_connect(uint32_t addr, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	set_nonblock(fd);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = addr;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
		int e = -errno;
		close(fd);
		return e;
	}
	return fd;
}

static void send_refuse(int fd, const struct agree_hdr *h, uint32_t reason)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_REFUSE, 0, h->comm_id, h->token);
	agree_buf_u32(&b, reason);
	agree_wire_end(&b, f);
	agree_conn_send(fd, &b);
	agree_buf_free(&b);
}

/* ---- hub directory ---- */

/* rank UINT32_MAX: any entry of the communicator (the token check) */
static struct hub_entry *hub_find(uint64_t comm_id, uint32_t rank)
{
	for (size_t i = 0; i < hub_dir_cnt; i++)
		if (hub_dir[i].comm_id == comm_id && (rank == UINT32_MAX || hub_dir[i].rank == rank))
			return &hub_dir[i];
	return NULL;
}

/* The notice of a member without a rank (AGREE_RANK_NONE, which hub_find reads as "any"). */
static struct hub_entry *hub_find_norank(uint64_t comm_id, uint64_t token)
{
	for (size_t i = 0; i < hub_dir_cnt; i++)
		if (hub_dir[i].comm_id == comm_id && hub_dir[i].rank == AGREE_RANK_NONE &&
		    hub_dir[i].token == token)
			return &hub_dir[i];
	return NULL;
}

static int hub_add(uint64_t comm_id, uint32_t rank, uint64_t token, uint32_t addr,
		   uint32_t port, int fd)
{
	struct hub_entry *e = hub_find(comm_id, UINT32_MAX);
	if (e && e->token != token)
		return -EEXIST; /* a second job with this comm: refused */
	if (rank == AGREE_RANK_NONE ? hub_find_norank(comm_id, token) != NULL
				    : hub_find(comm_id, rank) != NULL)
		return 0;
	if (hub_dir_cnt == HUB_DIR_MAX)
		return -ENOSPC;
	hub_dir[hub_dir_cnt++] = (struct hub_entry){comm_id, token, rank, addr, port, fd};
	return 0;
}

void agree_hub_unregister_local(uint64_t comm_id)
{
	for (size_t i = 0; i < hub_dir_cnt; i++)
		if (hub_dir[i].comm_id == comm_id && hub_dir[i].fd == -1) {
			hub_dir[i] = hub_dir[--hub_dir_cnt];
			return;
		}
}

bool agree_hub_local_lookup(uint64_t comm_id, uint32_t rank, uint64_t token, uint32_t *addr,
			    uint32_t *port)
{
	if (rank == AGREE_RANK_NONE)
		return false;
	struct hub_entry *e = hub_find(comm_id, rank);
	if (!e || e->token != token)
		return false;
	*addr = e->addr ? e->addr : htonl(INADDR_LOOPBACK);
	*port = e->port;
	return true;
}

int agree_hub_register(struct agree_comm *ac)
{
	if (is_hub)
		return hub_add(ac->comm_id, (uint32_t)atomic_load(&ac->rank), ac->token, 0,
			       listen_port, -1);
	if (hub_fd < 0)
		return -EAGAIN;
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_REGISTER, (uint32_t)atomic_load(&ac->rank),
				    ac->comm_id, ac->token);
	agree_buf_u32(&b, listen_port);
	agree_wire_end(&b, f);
	int rc = agree_conn_send(hub_fd, &b);
	agree_buf_free(&b);
	return rc;
}

int agree_hub_lookup(struct agree_comm *ac)
{
	if (is_hub) {
		uint32_t a, p;
		/* a member without a rank announced itself here (it looks the leader up itself,
		 * to tell it) */
		if (ac->role != AGREE_ROLE_RANKLESS && hub_find_norank(ac->comm_id, ac->token))
			return -ENXIO;
		if (!agree_hub_local_lookup(ac->comm_id, ac->parent, ac->token, &a, &p))
			return -EAGAIN;
		ac->leader_addr = a;
		ac->leader_port = p;
		return 0;
	}
	if (hub_fd < 0 || conn_of(hub_fd)->connecting)
		return -EAGAIN;
	struct agree_buf b = {0};
	/* the header's rank names the rank whose listener is wanted (the parent) */
	size_t f = agree_wire_begin(&b, AGREE_MSG_LOOKUP, ac->parent, ac->comm_id, ac->token);
	agree_wire_end(&b, f);
	int rc = agree_conn_send(hub_fd, &b);
	agree_buf_free(&b);
	return rc ? rc : -EAGAIN; /* the answer comes as LEADER */
}

static void hub_on_msg(struct conn *c, const struct agree_msg *m)
{
	if (m->h.type == AGREE_MSG_REGISTER) {
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		uint32_t addr = 0;
		if (getpeername(c->fd, (struct sockaddr *)&sa, &sl) == 0)
			addr = sa.sin_addr.s_addr;
		if (hub_add(m->h.comm_id, m->h.rank, m->h.token, addr, m->port, c->fd) != 0) {
			AGREE_STAT(msgs_refused, 1);
			send_refuse(c->fd, &m->h, AGREE_REFUSE_TOKEN);
		}
		return;
	}
	/* LOOKUP. A member will never join: the asker ends agreement (agree_group_on_norank;
	 * the member without a rank ignores it and uses the answer below to tell the leader) */
	if (hub_find_norank(m->h.comm_id, m->h.token))
		send_refuse(c->fd, &m->h, AGREE_REFUSE_NORANK);
	struct hub_entry *e = hub_find(m->h.comm_id, m->h.rank);
	struct hub_entry *any = hub_find(m->h.comm_id, UINT32_MAX);
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_LEADER, m->h.rank, m->h.comm_id, m->h.token);
	uint32_t addr = 0, port = 0;
	if (any && any->token != m->h.token)
		e = NULL;
	if (e && e->token == m->h.token) {
		addr = e->addr;
		port = e->port;
		if (!addr) { /* the hub leads: the address the asker reached us on */
			struct sockaddr_in sa;
			socklen_t sl = sizeof(sa);
			if (getsockname(c->fd, (struct sockaddr *)&sa, &sl) == 0)
				addr = sa.sin_addr.s_addr;
		}
	} else if (any && any->token != m->h.token) {
		AGREE_STAT(msgs_refused, 1);
	}
	agree_buf_put(&b, &addr, 4);
	agree_buf_u32(&b, port);
	agree_wire_end(&b, f);
	agree_conn_send(c->fd, &b);
	agree_buf_free(&b);
}

/* ---- message dispatch ---- */

static struct agree_comm *comm_by_id(uint64_t comm_id)
{
	for (size_t i = 0; i < AGREE_MAX_COMMS; i++) {
		struct agree_comm *ac = agree_registry_at(i);
		if (ac && ac->comm_id == comm_id)
			return ac;
	}
	return NULL;
}

/* Returns false to close the connection. */
static bool dispatch(struct conn *c, const struct agree_msg *m)
{
	uint16_t t = m->h.type;
	if (t == AGREE_MSG_REGISTER || t == AGREE_MSG_LOOKUP) {
		if (!is_hub || c->kind != CONN_PEER) {
			AGREE_STAT(msgs_refused, 1);
			send_refuse(c->fd, &m->h, AGREE_REFUSE_NOT_LEADER);
			return false;
		}
		hub_on_msg(c, m);
		return true;
	}
	if (t == AGREE_MSG_LEADER) {
		if (c->kind != CONN_HUB)
			return false;
		struct agree_comm *ac = comm_by_id(m->h.comm_id);
		if (ac && ac->token == m->h.token && m->port && m->h.rank == ac->parent) {
			ac->leader_addr = m->addr;
			ac->leader_port = m->port;
		}
		return true;
	}
	if (c->kind == CONN_HUB) {
		if (t == AGREE_MSG_REFUSE && m->reason == AGREE_REFUSE_NORANK) {
			struct agree_comm *ac = comm_by_id(m->h.comm_id);
			if (ac && ac->token == m->h.token)
				agree_group_on_norank(ac);
		} else if (t == AGREE_MSG_REFUSE) {
			struct agree_comm *ac = comm_by_id(m->h.comm_id);
			if (ac && ac->role == AGREE_ROLE_LEADER)
				agree_comm_fallback(ac, agree_first_uncommitted_seq(ac),
						    "the rendezvous hub refused this communicator "
						    "(another job registered it)");
		}
		return true;
	}
	struct agree_comm *ac = c->kind == CONN_LINK ? c->link_owner : comm_by_id(m->h.comm_id);
	if (!ac || !atomic_load_explicit(&ac->streams_ready, memory_order_acquire) ||
	    ac->comm_id != m->h.comm_id) {
		AGREE_STAT(msgs_refused, 1);
		send_refuse(c->fd, &m->h, AGREE_REFUSE_NOT_LEADER);
		return false;
	}
	if (m->h.token != ac->token) {
		AGREE_STAT(msgs_refused, 1);
		send_refuse(c->fd, &m->h, AGREE_REFUSE_TOKEN);
		return false;
	}
	bool adopt = false;
	return agree_group_on_msg(ac, c->fd, m, &adopt);
}

static void conn_read(struct conn *c)
{
	uint8_t tmp[65536];
	bool eof = false;
	for (;;) {
		ssize_t n = recv(c->fd, tmp, sizeof(tmp), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
			eof = true; /* frames that arrived before the FIN are still handled */
			break;
		}
		if (n < 0)
			break;
		AGREE_STAT(bytes_received, (uint64_t)n);
		agree_buf_put(&c->in, tmp, (size_t)n);
		if (c->in.oom) {
			conn_drop(c, true);
			return;
		}
		if ((size_t)n < sizeof(tmp))
			break;
	}
	size_t off = 0;
	while (off < c->in.len) {
		struct agree_msg m;
		char err[160];
		long used = agree_wire_parse(c->in.p + off, c->in.len - off, &m, err, sizeof(err));
		if (used == 0)
			break;
		if (used < 0) {
			AGREE_STAT(msgs_refused, 1);
			static _Atomic int logged;
			if (atomic_fetch_add(&logged, 1) < 5)
				runtime_log(NB_LOG_WARN, NB_LOG_TUNING,
					    "agree: refused a connection on port %u: %s", listen_port,
					    err);
			conn_drop(c, true);
			return;
		}
		int fd = c->fd;
		bool keep = dispatch(c, &m);
		if (conns[fd] != c) /* dropped by the handler */
			return;
		off += (size_t)used;
		if (!keep) {
			conn_flush(c);
			conn_drop(c, true);
			return;
		}
	}
	if (off) {
		memmove(c->in.p, c->in.p + off, c->in.len - off);
		c->in.len -= off;
	}
	if (eof)
		conn_drop(c, true);
}

/* ---- listener / hub link ---- */

static bool resolve4(const char *host, uint32_t *addr)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res = NULL;
	if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
		return false;
	*addr = ((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr;
	freeaddrinfo(res);
	return true;
}

static int listen_on(uint32_t addr, uint16_t port)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	sa.sin_addr.s_addr = addr;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 1024) != 0) {
		close(fd);
		return -1;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	return fd;
}

static void setup_listener(void)
{
	const struct agree_config *cfg = agree_config();
	if (!cfg->enabled || !cfg->have_addr)
		return;
	if (!resolve4(cfg->host, &hub_addr)) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING,
			    "agree: cannot resolve rendezvous host '%s'; agreement impossible",
			    cfg->host);
		return;
	}
	listen_fd = listen_on(hub_addr, cfg->port);
	if (listen_fd >= 0) {
		is_hub = true;
		listen_port = cfg->port;
	} else {
		listen_fd = listen_on(htonl(INADDR_ANY), 0);
		if (listen_fd >= 0) {
			struct sockaddr_in sa;
			socklen_t sl = sizeof(sa);
			getsockname(listen_fd, (struct sockaddr *)&sa, &sl);
			listen_port = ntohs(sa.sin_port);
		}
	}
	runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_TUNING,
		    "agree: listening on port %u%s (rendezvous %s:%u)", listen_port,
		    is_hub ? ", rendezvous hub" : "", cfg->host, cfg->port);
}

static void hub_connect(uint64_t now)
{
	if (is_hub || hub_fd >= 0 || listen_fd < 0 || now < hub_retry_ns)
		return;
	hub_retry_ns = now + 50000000ull;
	int fd = agree_conn_connect(hub_addr, agree_config()->port);
	if (fd < 0)
		return;
	struct conn *c = conn_add(fd, CONN_HUB);
	if (c) {
		c->connecting = true;
		hub_fd = fd;
	}
}

/* ---- the loop ---- */

static void flush_all(void)
{
	for (int fd = 0; fd < MAX_CONNS; fd++) {
		struct conn *c = conns[fd];
		if (c && c->out.len > c->out_off)
			conn_flush(c);
	}
}

/* Groups still agreeing: the loop then wakes every 2 ms for deadlines (collect window,
 * lookups, retries); otherwise every 100 ms (decision-log flushing only). */
static unsigned live_groups;

static void step_comms(uint64_t now)
{
	unsigned live = 0;
	agree_registry_lock();
	for (size_t i = 0; i < AGREE_MAX_COMMS; i++) {
		struct agree_comm *ac = agree_registry_at(i);
		if (!ac)
			continue;
		bool ready = atomic_load_explicit(&ac->streams_ready, memory_order_acquire);
		if (ready && ac->grouped && !atomic_load(&ac->closing)) {
			agree_group_step(ac, now);
			live += !ac->group_dead;
		}
		if (atomic_load(&ac->closing) && !ac->tuner_open && !ac->detached) {
			agree_decision_log_drain(false); /* its last decisions, before it goes */
			agree_group_detach(ac);
			if (agree_registry_remove_detached_locked(ac)) {
				agree_registry_unlock();
				agree_comm_release(ac);
				agree_registry_lock();
			}
		}
	}
	agree_registry_unlock();
	live_groups = live;
}

static void *service_main(void *arg)
{
	(void)arg;
	struct pollfd *pfd = calloc(MAX_CONNS + 2, sizeof(*pfd));
	int *idx = calloc(MAX_CONNS + 2, sizeof(*idx));
	if (!pfd || !idx) {
		free(pfd);
		free(idx);
		return NULL;
	}
	struct timespec cpu0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
	while (!atomic_load(&service_stop)) {
		struct timespec cpu1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
		AGREE_STAT(service_cpu_ns, (uint64_t)(cpu1.tv_sec - cpu0.tv_sec) * 1000000000ull +
						   (uint64_t)cpu1.tv_nsec - (uint64_t)cpu0.tv_nsec);
		cpu0 = cpu1;
		uint64_t now = agree_now_ns();
		hub_connect(now);
		size_t n = 0;
		pfd[n] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
		idx[n++] = -1;
		if (listen_fd >= 0) {
			pfd[n] = (struct pollfd){.fd = listen_fd, .events = POLLIN};
			idx[n++] = -2;
		}
		for (int fd = 0; fd < MAX_CONNS; fd++) {
			struct conn *c = conns[fd];
			if (!c)
				continue;
			short ev = POLLIN;
			if (c->connecting || c->out.len > c->out_off)
				ev |= POLLOUT;
			pfd[n] = (struct pollfd){.fd = fd, .events = ev};
			idx[n++] = fd;
		}
		int r = poll(pfd, n, live_groups ? 2 : 100);
		agree_registry_lock();
		if (agree_config()->fault_stall_service_ns) {
			struct timespec ts = {0, (long)(agree_config()->fault_stall_service_ns % 1000000000ull)};
			ts.tv_sec = (time_t)(agree_config()->fault_stall_service_ns / 1000000000ull);
			nanosleep(&ts, NULL);
		}
		for (size_t i = 0; r > 0 && i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (idx[i] == -1) {
				uint64_t v;
				ssize_t rr = read(wake_fd, &v, sizeof(v));
				(void)rr;
			} else if (idx[i] == -2) {
				for (;;) {
					int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
					if (fd < 0)
						break;
					set_nonblock(fd);
					conn_add(fd, CONN_PEER);
				}
			} else {
				struct conn *c = conns[idx[i]];
				if (!c)
					continue;
				if (c->connecting && (pfd[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
					int err = 0;
					socklen_t el = sizeof(err);
					getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
					if (err) {
						conn_drop(c, true);
						continue;
					}
					c->connecting = false;
				}
				if (pfd[i].revents & POLLOUT)
					conn_flush(c);
				if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
					conn_read(c);
			}
		}
		agree_registry_unlock();
		step_comms(agree_now_ns());
		flush_all();
		agree_decision_log_drain(false);
	}
	free(pfd);
	free(idx);
	return NULL;
}

static void start_once_fn(void)
{
	wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	setup_listener();
	if (pthread_create(&service_thread, NULL, service_main, NULL) == 0)
		service_running = true;
	else
		runtime_log(NB_LOG_WARN, NB_LOG_INIT | NB_LOG_TUNING,
			    "agree: cannot start the service thread; agreed maps read as zeros "
			    "and versions never activate (NCCL's defaults after the wait bound)");
}

bool agree_service_running(void)
{
	return service_running;
}

void agree_service_start(void)
{
	pthread_once(&start_once, start_once_fn);
}

void agree_shutdown(void)
{
	if (!service_running)
		return;
	atomic_store(&service_stop, true);
	agree_service_wake();
	pthread_join(service_thread, NULL);
	service_running = false;
	agree_decision_log_drain(true);
}

#define _GNU_SOURCE /* accept4 */
/* agree: the one service thread per process. It owns every socket: the process's listener
 * (the rendezvous port when this process could bind it - the hub - else an ephemeral
 * port), the connection to the hub, the follower links and the leader's accepted peers.
 * Sockets are non-blocking; output is queued per connection and flushed on POLLOUT, so a
 * slow peer never stalls the thread.
 *
 * Every connection authenticates first (agree_auth.h): until it has, the acceptor reads
 * one AUTH frame at most (a few dozen bytes) within AGREE_AUTH_MS, at most
 * AGREE_PREAUTH_MAX such connections are kept (the oldest goes when another arrives), and
 * nothing is allocated for them but the connection record. At the process's descriptor
 * limit the listener does not spin: one descriptor is kept in reserve to accept and close
 * what it cannot serve (docs/agreement.md "Threat model"). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "agree/agree_auth.h"
#include "agree/agree_internal.h"
#include "agree/agree_recover.h"
#include "runtime/runtime.h"

#define AGREE_PREAUTH_MAX 64     /* connections not authenticated yet, per process */
#define AGREE_AUTH_MS 3000       /* time a connection has to authenticate */
#define AGREE_PREAUTH_BYTES 256  /* input buffered before authentication */
#define AGREE_OUT_MAX (64u << 20) /* queued output per connection: beyond, the peer is lost */

enum conn_kind { CONN_PEER = 1, CONN_HUB, CONN_LINK };
/* connector: CONNECTING -> WAIT_CHALLENGE -> WAIT_OK -> READY;
 * acceptor: WAIT_AUTH -> READY */
enum conn_state { CS_CONNECTING, CS_WAIT_CHALLENGE, CS_WAIT_OK, CS_WAIT_AUTH, CS_READY };

struct conn {
	int fd;
	enum conn_kind kind;
	enum conn_state state;
	struct agree_buf in, out, hs; /* hs: handshake frames, sent before anything in out */
	size_t out_off, hs_off;
	uint8_t nonce_mine[AGREE_NONCE_BYTES], nonce_peer[AGREE_NONCE_BYTES];
	uint64_t since_ns;             /* accepted / connected: the authentication deadline */
	uint32_t peer_addr;            /* network order, for messages */
	uint16_t peer_port;
	struct agree_comm *link_owner; /* CONN_LINK: the follower comm */
};

static pthread_once_t start_once = PTHREAD_ONCE_INIT;
static pthread_t service_thread;
static bool service_running;
static _Atomic bool service_stop;
static _Atomic uint64_t service_loops;
static _Atomic bool fault_hold_armed; /* test-only (fault_hold_*) */
/* The latest pass (service_loops) that read every connection poll found readable, polled
 * after the pass began: everything that had reached this process's sockets before that
 * pass began has been handled (agree_service_drained). */
static uint64_t drained_pass;
static int wake_fd = -1;
static int listen_fd = -1;
static int reserve_fd = -1;          /* kept free to accept-and-close at the fd limit */
static uint64_t listen_pause_until;  /* EMFILE without a reserve: stop polling a while */
static uint16_t listen_port;
static bool is_hub;
static uint32_t hub_addr; /* network order */
static int hub_fd = -1;
static uint64_t hub_retry_ns;
static bool hub_refused;             /* the hub did not accept this process's secret */
static struct conn **conns;          /* by fd */
static int conns_cap;                /* entries of conns */
static int conns_limit;              /* connections kept at most (below RLIMIT_NOFILE) */
static int conns_live, preauth_live;
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
int agree_hub_link(void) { return hub_fd >= 0 && agree_conn_ready(hub_fd) ? hub_fd : -1; }
uint16_t agree_listen_port(void) { return listen_port; }
bool agree_hub_refused(void) { return hub_refused; }
bool agree_service_drained(uint64_t pass)
{
	return drained_pass > pass;
}

uint64_t agree_service_loops(void) { return atomic_load_explicit(&service_loops, memory_order_relaxed); }
uint64_t agree_service_passes(void) { return agree_service_loops(); }

void agree_service_wake(void)
{
	if (wake_fd >= 0) {
		uint64_t one = 1;
		ssize_t r = write(wake_fd, &one, sizeof(one));
		(void)r; /* EAGAIN: a wake-up is already pending */
	}
}

/* ---- connections ---- */

bool agree_conn_ready(int fd);

static struct conn *conn_of(int fd)
{
	return fd >= 0 && fd < conns_cap ? conns[fd] : NULL;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	fcntl(fd, F_SETFL, fl | O_NONBLOCK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Grows the table to hold fd; false when fd is beyond what this process may keep. */
static bool conns_room(int fd)
{
	if (fd < conns_cap)
		return true;
	if (fd >= conns_limit + 64 + 1024) /* the host holds many descriptors: still bounded */
		return false;
	int cap = conns_cap ? conns_cap : 256;
	while (cap <= fd)
		cap *= 2;
	struct conn **n = realloc(conns, (size_t)cap * sizeof(*n));
	if (!n)
		return false;
	memset(n + conns_cap, 0, (size_t)(cap - conns_cap) * sizeof(*n));
	conns = n;
	conns_cap = cap;
	return true;
}

static void peer_of(struct conn *c)
{
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	if (getpeername(c->fd, (struct sockaddr *)&sa, &sl) == 0 && sa.sin_family == AF_INET) {
		c->peer_addr = sa.sin_addr.s_addr;
		c->peer_port = ntohs(sa.sin_port);
	}
}

static const char *addr_str(uint32_t addr, uint16_t port, char *buf, size_t len)
{
	char a[INET_ADDRSTRLEN] = "?";
	inet_ntop(AF_INET, &addr, a, sizeof(a));
	snprintf(buf, len, "%s:%u", a, port);
	return buf;
}

static struct conn *conn_add(int fd, enum conn_kind kind, enum conn_state state)
{
	if (fd < 0 || conns_live >= conns_limit || !conns_room(fd)) {
		if (fd >= 0)
			close(fd);
		AGREE_STAT(conns_refused, 1);
		return NULL;
	}
	struct conn *c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->kind = kind;
	c->state = state;
	c->since_ns = agree_now_ns();
	conns[fd] = c;
	conns_live++;
	preauth_live += state != CS_READY;
	return c;
}

static void conn_flush(struct conn *c);

static void conn_drop(struct conn *c, bool notify)
{
	int fd = c->fd;
	conns[fd] = NULL;
	conns_live--;
	preauth_live -= c->state != CS_READY;
	if (notify) {
		if (c->kind == CONN_LINK && c->link_owner)
			agree_group_on_close(c->link_owner, fd);
		else if (c->kind == CONN_PEER && c->state == CS_READY) {
			agree_registry_lock();
			for (size_t i = 0; i < AGREE_MAX_COMMS; i++) {
				struct agree_comm *ac = agree_registry_at(i);
				if (ac && (ac->role == AGREE_ROLE_LEADER || ac->relay || ac->recov_fds))
					agree_group_on_close(ac, fd);
			}
			agree_registry_unlock();
			agree_hub_drop_conn(fd);
		} else if (c->kind == CONN_HUB) {
			hub_fd = -1;
		}
	} else if (c->kind == CONN_HUB) {
		hub_fd = -1;
	}
	agree_buf_free(&c->in);
	agree_buf_free(&c->out);
	agree_buf_free(&c->hs);
	free(c);
	close(fd);
}

void agree_conn_flush_close(int fd)
{
	struct conn *c = conn_of(fd);
	if (!c)
		return;
	uint64_t until = agree_now_ns() + 100000000ull;
	while ((c->out_off < c->out.len || c->hs_off < c->hs.len) && c->state == CS_READY &&
	       agree_now_ns() < until) {
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

static bool flush_buf(struct conn *c, struct agree_buf *b, size_t *off)
{
	while (*off < b->len) {
		ssize_t n = send(c->fd, b->p + *off, b->len - *off, MSG_NOSIGNAL);
		if (n <= 0)
			return false;
		*off += (size_t)n;
		AGREE_STAT(bytes_sent, (uint64_t)n);
	}
	b->len = 0;
	*off = 0;
	return true;
}

static void conn_flush(struct conn *c)
{
	if (c->state == CS_CONNECTING)
		return;
	if (!flush_buf(c, &c->hs, &c->hs_off))
		return;
	/* nothing but the handshake before both sides proved the secret */
	if (c->state == CS_READY)
		flush_buf(c, &c->out, &c->out_off);
}

int agree_conn_send(int fd, const struct agree_buf *b)
{
	struct conn *c = conn_of(fd);
	if (!c || b->oom)
		return -EPIPE;
	if (c->out.len - c->out_off > AGREE_OUT_MAX) {
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

/* Sends what is queued for fd now rather than at the end of the loop iteration: the
 * COMMITs and READYs a leader announces leave together, so that a process killed right
 * after deciding has told either every direct child or none (docs/agreement.md). */
void agree_conn_push(int fd)
{
	struct conn *c = conn_of(fd);
	if (c)
		conn_flush(c);
}

size_t agree_conn_unsent(int fd)
{
	struct conn *c = conn_of(fd);
	return c ? (c->hs.len - c->hs_off) + (c->out.len - c->out_off) : 0;
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

bool agree_conn_register(int fd, struct agree_comm *owner)
{
	struct conn *c = conn_add(fd, CONN_LINK, CS_CONNECTING); /* closes fd on failure */
	if (!c)
		return false;
	c->link_owner = owner;
	return true;
}

size_t agree_conn_queued(int fd)
{
	struct conn *c = conn_of(fd);
	return c ? (c->out.len - c->out_off) + (c->hs.len - c->hs_off) : 0;
}

bool agree_conn_ready(int fd)
{
	struct conn *c = conn_of(fd);
	return c && c->state == CS_READY;
}

static void send_refuse(struct conn *c, const struct agree_hdr *h, uint32_t reason)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_REFUSE, 0, h ? h->comm_id : 0);
	agree_buf_u32(&b, reason);
	agree_wire_end(&b, f);
	/* before authentication the refusal is part of the handshake */
	if (c->state == CS_READY)
		agree_conn_send(c->fd, &b);
	else if (!b.oom)
		agree_buf_put(&c->hs, b.p, b.len);
	agree_buf_free(&b);
}

/* ---- authentication ---- */

static void hs_frame(struct conn *c, enum agree_msg_type t, const void *payload, size_t n)
{
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, t, 0, 0);
	agree_buf_put(&b, payload, n);
	agree_wire_end(&b, f);
	if (!b.oom)
		agree_buf_put(&c->hs, b.p, b.len);
	agree_buf_free(&b);
}

static void authenticated(struct conn *c)
{
	c->state = CS_READY;
	preauth_live--;
	conn_flush(c);
	if (c->kind == CONN_HUB) /* members waiting for the hub link ask now */
		for (size_t i = 0; i < AGREE_MAX_COMMS; i++) {
			struct agree_comm *ac = agree_registry_at(i);
			if (ac)
				ac->next_try_ns = 0;
		}
}

/* Without a secret the key is public: the peer must be a process of this user on this
 * host. */
static bool peer_owner_ok(struct conn *c, char *why, size_t whylen)
{
	if (agree_config()->secret_set)
		return true;
	uid_t uid;
	int rc = agree_peer_uid(c->fd, &uid);
	if (rc == 0 && uid == geteuid())
		return true;
	if (rc == 0)
		snprintf(why, whylen, "it belongs to user %u, not to this one (without "
			 "NCCLBPF_AGREE_SECRET only this user's processes on this host are accepted)",
			 (unsigned)uid);
	else if (rc == -ENOENT)
		snprintf(why, whylen, "it is on another host, and without NCCLBPF_AGREE_SECRET only "
			 "this user's processes on this host are accepted");
	else
		snprintf(why, whylen, "its owner cannot be determined (%s)", strerror(-rc));
	return false;
}

static void auth_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void auth_log(const char *fmt, ...)
{
	static _Atomic int logged;
	int n = atomic_fetch_add(&logged, 1);
	if (n >= 8)
		return;
	char msg[384];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	runtime_log(NB_LOG_WARN, NB_LOG_TUNING | NB_LOG_INIT, "agree: %s%s", msg,
		    n == 7 ? " (further such messages suppressed)" : "");
}

/* A handshake frame on a connection not authenticated yet. false: close it. */
static bool handshake(struct conn *c, const struct agree_msg *m)
{
	const struct agree_key *key = &agree_config()->key;
	char who[48], why[256];
	addr_str(c->peer_addr, c->peer_port, who, sizeof(who));
	if (c->state == CS_WAIT_AUTH && m->h.type == AGREE_MSG_AUTH) {
		if (m->mac != agree_auth_mac(key, 'c', c->nonce_mine, m->nonce)) {
			AGREE_STAT(conns_refused, 1);
			auth_log("refused a connection from %s on port %u: it does not know this job's "
				 "NCCLBPF_AGREE_SECRET (another job, a wrong secret, or a stranger)",
				 who, listen_port);
			send_refuse(c, NULL, AGREE_REFUSE_AUTH);
			return false;
		}
		if (!peer_owner_ok(c, why, sizeof(why))) {
			AGREE_STAT(conns_refused, 1);
			auth_log("refused a connection from %s on port %u: %s", who, listen_port, why);
			send_refuse(c, NULL, AGREE_REFUSE_AUTH);
			return false;
		}
		uint8_t mac[8];
		uint64_t v = agree_auth_mac(key, 'a', m->nonce, c->nonce_mine);
		for (int i = 0; i < 8; i++)
			mac[i] = (uint8_t)(v >> (8 * i));
		hs_frame(c, AGREE_MSG_AUTH_OK, mac, sizeof(mac));
		authenticated(c);
		return true;
	}
	if (c->state == CS_WAIT_CHALLENGE && m->h.type == AGREE_MSG_CHALLENGE) {
		memcpy(c->nonce_peer, m->nonce, sizeof(c->nonce_peer));
		if (agree_random(c->nonce_mine, sizeof(c->nonce_mine)) != 0)
			return false;
		uint8_t p[AGREE_NONCE_BYTES + 8];
		memcpy(p, c->nonce_mine, AGREE_NONCE_BYTES);
		uint64_t v = agree_auth_mac(key, 'c', c->nonce_peer, c->nonce_mine);
		for (int i = 0; i < 8; i++)
			p[AGREE_NONCE_BYTES + i] = (uint8_t)(v >> (8 * i));
		hs_frame(c, AGREE_MSG_AUTH, p, sizeof(p));
		c->state = CS_WAIT_OK;
		return true;
	}
	if (c->state == CS_WAIT_OK && m->h.type == AGREE_MSG_AUTH_OK) {
		bool ok = m->mac == agree_auth_mac(key, 'a', c->nonce_mine, c->nonce_peer);
		if (!ok || !peer_owner_ok(c, why, sizeof(why))) {
			AGREE_STAT(conns_refused, 1);
			if (!ok)
				snprintf(why, sizeof(why), "it does not prove this job's "
					 "NCCLBPF_AGREE_SECRET (another job holds the port, or the "
					 "secrets differ)");
			auth_log("%s at %s is not one of this job's processes: %s",
				 c->kind == CONN_HUB ? "the rendezvous hub" : "the peer", who, why);
			if (c->kind == CONN_HUB)
				hub_refused = true;
			else if (c->link_owner)
				agree_group_on_auth_failure(c->link_owner, why);
			return false;
		}
		if (c->kind == CONN_HUB)
			hub_refused = false;
		authenticated(c);
		return true;
	}
	if ((c->state == CS_WAIT_CHALLENGE || c->state == CS_WAIT_OK) &&
	    m->h.type == AGREE_MSG_REFUSE) {
		if (m->reason == AGREE_REFUSE_AUTH) {
			snprintf(why, sizeof(why), "it refused this process's credentials: "
				 "NCCLBPF_AGREE_SECRET differs from %s's (or, without a secret, this "
				 "process is another user's or on another host)",
				 c->kind == CONN_HUB ? "the hub" : "the leader");
			auth_log("%s at %s: %s", c->kind == CONN_HUB ? "the rendezvous hub" :
				 "the peer", who, why);
			if (c->kind == CONN_HUB)
				hub_refused = true;
			else if (c->link_owner)
				agree_group_on_auth_failure(c->link_owner, why);
		}
		return false; /* BUSY: retried later */
	}
	AGREE_STAT(msgs_refused, 1);
	return false;
}

/* ---- the hub's side of REGISTER / LOOKUP (authenticated members only) ---- */

/* The answer to a LOOKUP of (comm, rank): LEADER with the listener (port 0: not registered),
 * after a REFUSE(NORANK) when a member announced it will never join. */
static void hub_answer_lookup(struct conn *c, uint64_t comm_id, uint32_t rank)
{
	struct agree_hdr h = {.rank = rank, .comm_id = comm_id};
	/* A member will never join: the asker ends agreement (agree_group_on_norank; the
	 * member without a rank ignores it and uses the answer below to tell the leader) */
	if (agree_hub_has_notice(comm_id))
		send_refuse(c, &h, AGREE_REFUSE_NORANK);
	struct agree_buf b = {0};
	size_t f = agree_wire_begin(&b, AGREE_MSG_LEADER, rank, comm_id);
	uint32_t addr = 0, port = 0;
	if (agree_hub_get(comm_id, rank, &addr, &port) && !addr) {
		/* this process leads: the address the asker reached us on */
		struct sockaddr_in sa;
		socklen_t sl = sizeof(sa);
		if (getsockname(c->fd, (struct sockaddr *)&sa, &sl) == 0)
			addr = sa.sin_addr.s_addr;
	}
	agree_buf_put(&b, &addr, 4);
	agree_buf_u32(&b, port);
	agree_wire_end(&b, f);
	agree_conn_send(c->fd, &b);
	agree_buf_free(&b);
}

static struct agree_comm *comm_by_id(uint64_t comm_id);

void agree_hub_registered(uint64_t comm_id, uint32_t rank)
{
	int fds[64];
	uint32_t ranks[64];
	size_t n;
	while ((n = agree_hub_unpark(comm_id, rank, fds, ranks, 64)) > 0)
		for (size_t i = 0; i < n; i++) {
			struct conn *c = conn_of(fds[i]);
			if (c && c->state == CS_READY)
				hub_answer_lookup(c, comm_id, ranks[i]);
		}
	/* this process's own member of it looks it up locally: on its next pass, not its
	 * retry timer - and learns at once where the recovery round's successor (or, below a
	 * relay, the leader) listens, not on its lookup backoff */
	struct agree_comm *ac = comm_by_id(comm_id);
	uint32_t a, p;
	if (ac) {
		ac->next_try_ns = 0;
		if (agree_hub_local_lookup(comm_id, rank, &a, &p))
			agree_recover_on_leader(ac, rank, a, p);
	}
}

static void hub_on_msg(struct conn *c, const struct agree_msg *m)
{
	if (m->h.type == AGREE_MSG_REGISTER) {
		int rc = agree_hub_add(m->h.comm_id, m->h.rank, c->peer_addr, m->port, c->fd);
		if (rc != 0) {
			AGREE_STAT(msgs_refused, 1);
			send_refuse(c, &m->h, rc == -EEXIST ? AGREE_REFUSE_DUPLICATE : AGREE_REFUSE_BUSY);
		} else {
			agree_hub_registered(m->h.comm_id, m->h.rank);
		}
		return;
	}
	/* LOOKUP: answered now when registered (or a notice says never); otherwise when the
	 * listener registers (parked), or "not yet" when the parking is full */
	uint32_t a, p;
	if (!agree_hub_has_notice(m->h.comm_id) && !agree_hub_get(m->h.comm_id, m->h.rank, &a, &p) &&
	    agree_hub_park(m->h.comm_id, m->h.rank, c->fd) == 0)
		return;
	hub_answer_lookup(c, m->h.comm_id, m->h.rank);
}

/* ---- message dispatch (authenticated connections) ---- */

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
	if (t >= AGREE_MSG_CHALLENGE && t <= AGREE_MSG_AUTH_OK)
		return false; /* a second handshake */
	if (t == AGREE_MSG_REGISTER || t == AGREE_MSG_LOOKUP) {
		if (!is_hub || c->kind != CONN_PEER) {
			AGREE_STAT(msgs_refused, 1);
			send_refuse(c, &m->h, AGREE_REFUSE_NOT_LEADER);
			return false;
		}
		hub_on_msg(c, m);
		return true;
	}
	if (t == AGREE_MSG_LEADER) {
		if (c->kind != CONN_HUB)
			return false;
		struct agree_comm *ac = comm_by_id(m->h.comm_id);
		if (ac && m->port && m->h.rank == ac->parent) {
			ac->leader_addr = m->addr;
			ac->leader_port = m->port;
			ac->next_try_ns = 0; /* connect on this pass, not on the retry timer */
		} else if (ac) {
			agree_recover_on_leader(ac, m->h.rank, m->addr, m->port);
		}
		return true;
	}
	if (c->kind == CONN_HUB) {
		struct agree_comm *ac = t == AGREE_MSG_REFUSE ? comm_by_id(m->h.comm_id) : NULL;
		if (ac && m->reason == AGREE_REFUSE_NORANK)
			agree_group_on_norank(ac);
		else if (ac && (ac->role == AGREE_ROLE_LEADER || ac->relay))
			agree_group_on_hub_refusal(ac, m->reason);
		return true;
	}
	struct agree_comm *ac = c->kind == CONN_LINK ? c->link_owner : comm_by_id(m->h.comm_id);
	if (!ac || !atomic_load_explicit(&ac->streams_ready, memory_order_acquire) ||
	    ac->comm_id != m->h.comm_id) {
		AGREE_STAT(msgs_refused, 1);
		send_refuse(c, &m->h, AGREE_REFUSE_NOT_LEADER);
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
		/* before authentication: a handshake frame's worth at most */
		size_t room = sizeof(tmp);
		if (c->state != CS_READY) {
			if (c->in.len >= AGREE_PREAUTH_BYTES) {
				AGREE_STAT(conns_refused, 1);
				conn_drop(c, true);
				return;
			}
			room = AGREE_PREAUTH_BYTES - c->in.len;
		}
		ssize_t n = recv(c->fd, tmp, room, 0);
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
		if ((size_t)n < room || c->state != CS_READY)
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
			if (c->state == CS_READY && atomic_fetch_add(&logged, 1) < 5)
				runtime_log(NB_LOG_WARN, NB_LOG_TUNING,
					    "agree: refused a connection on port %u: %s", listen_port,
					    err);
			conn_drop(c, true);
			return;
		}
		int fd = c->fd;
		bool keep = c->state == CS_READY ? dispatch(c, &m) : handshake(c, &m);
		if (conn_of(fd) != c) /* dropped by the handler */
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

/* Connections that did not authenticate in time go (slow or silent peers hold nothing). */
static void expire_preauth(uint64_t now)
{
	static uint64_t next;
	if (!preauth_live || now < next)
		return;
	next = now + 50000000ull;
	for (int fd = 0; fd < conns_cap; fd++) {
		struct conn *c = conns[fd];
		if (c && c->state != CS_READY && now > c->since_ns &&
		    now - c->since_ns > AGREE_AUTH_MS * 1000000ull) {
			AGREE_STAT(conns_refused, 1);
			conn_drop(c, true);
		}
	}
}

/* The oldest acceptor-side connection still authenticating: room for a new one. */
static void evict_oldest_preauth(void)
{
	struct conn *old = NULL;
	for (int fd = 0; fd < conns_cap; fd++) {
		struct conn *c = conns[fd];
		if (c && c->kind == CONN_PEER && c->state == CS_WAIT_AUTH &&
		    (!old || c->since_ns < old->since_ns))
			old = c;
	}
	if (old) {
		AGREE_STAT(conns_refused, 1);
		conn_drop(old, false);
	}
}

static void accept_all(uint64_t now)
{
	for (int i = 0; i < 256; i++) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno != EMFILE && errno != ENFILE)
				return;
			/* the descriptor limit: accept into the reserve and close, so that the
			 * pending connection leaves the queue and poll does not spin on it */
			static _Atomic bool logged;
			if (!atomic_exchange(&logged, true))
				runtime_log(NB_LOG_WARN, NB_LOG_TUNING, "agree: the process is out of "
					    "file descriptors: connections on port %u are refused",
					    listen_port);
			AGREE_STAT(conns_refused, 1);
			if (reserve_fd >= 0) {
				close(reserve_fd);
				reserve_fd = -1;
				int x = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
				if (x >= 0)
					close(x);
				reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
				if (x >= 0)
					continue;
			}
			listen_pause_until = now + 100000000ull;
			return;
		}
		if (preauth_live >= AGREE_PREAUTH_MAX)
			evict_oldest_preauth();
		set_nonblock(fd);
		struct conn *c = conn_add(fd, CONN_PEER, CS_WAIT_AUTH);
		if (!c)
			continue;
		peer_of(c);
		if (agree_random(c->nonce_mine, sizeof(c->nonce_mine)) != 0) {
			conn_drop(c, false);
			continue;
		}
		hs_frame(c, AGREE_MSG_CHALLENGE, c->nonce_mine, sizeof(c->nonce_mine));
		conn_flush(c);
	}
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
		/* without a secret only this host's processes may connect: listen on loopback
		 * when the rendezvous is there */
		uint32_t any = !cfg->secret_set && (ntohl(hub_addr) >> 24) == 127
				       ? htonl(INADDR_LOOPBACK) : htonl(INADDR_ANY);
		listen_fd = listen_on(any, 0);
		if (listen_fd >= 0) {
			struct sockaddr_in sa;
			socklen_t sl = sizeof(sa);
			getsockname(listen_fd, (struct sockaddr *)&sa, &sl);
			listen_port = ntohs(sa.sin_port);
		}
	}
	runtime_log(NB_LOG_INFO, NB_LOG_INIT | NB_LOG_TUNING,
		    "agree: listening on port %u%s (rendezvous %s:%u, %s)", listen_port,
		    is_hub ? ", rendezvous hub" : "", cfg->host, cfg->port,
		    cfg->secret_set ? "peers authenticated by NCCLBPF_AGREE_SECRET"
				    : "no secret: only this user's processes on this host");
}

static void hub_connect(uint64_t now)
{
	if (is_hub || hub_fd >= 0 || listen_fd < 0 || now < hub_retry_ns)
		return;
	/* a hub that refused this process's secret is asked again, but rarely */
	hub_retry_ns = now + (hub_refused ? 1000000000ull : 50000000ull);
	int fd = agree_conn_connect(hub_addr, agree_config()->port);
	if (fd < 0)
		return;
	struct conn *c = conn_add(fd, CONN_HUB, CS_CONNECTING);
	if (c)
		hub_fd = fd;
}

/* ---- the loop ---- */

static void flush_all(void)
{
	for (int fd = 0; fd < conns_cap; fd++) {
		struct conn *c = conns[fd];
		if (c && (c->out.len > c->out_off || c->hs.len > c->hs_off))
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

/* A connector that connected: waits for the acceptor's CHALLENGE. */
static void connected(struct conn *c)
{
	int err = 0;
	socklen_t el = sizeof(err);
	getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err) {
		if (c->kind == CONN_LINK && c->link_owner)
			agree_group_on_connect_error(c->link_owner, c->fd, err);
		conn_drop(c, true);
		return;
	}
	c->state = CS_WAIT_CHALLENGE;
	peer_of(c);
}

void agree_fault_hold_arm(void)
{
	atomic_store(&fault_hold_armed, true);
}

/* Test-only (NCCLBPF_AGREE_TEST_FAULT hold_after_data=N,hold_file=PATH): this thread holds
 * - nothing read, written or stepped, as if the process were stopped - until PATH exists
 * (at most 120 s). Its loop count still advances, so that this rank's own tuner does not
 * take the service for dead (a stopped process stops its tuner too). */
static void fault_hold(void)
{
	if (!atomic_exchange(&fault_hold_armed, false))
		return;
	const char *path = agree_config()->fault_hold_file;
	runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: test fault: the service holds until %s "
		    "exists", path);
	for (int i = 0; i < 120000 && path[0] && access(path, F_OK) != 0 &&
	     !atomic_load(&service_stop); i++) {
		atomic_fetch_add_explicit(&service_loops, 1, memory_order_relaxed);
		struct timespec ts = {0, 1000000};
		nanosleep(&ts, NULL);
	}
	runtime_log(NB_LOG_INFO, NB_LOG_TUNING, "agree: test fault: the service resumes");
}

static void *service_main(void *arg)
{
	(void)arg;
	size_t pcap = 0;
	struct pollfd *pfd = NULL;
	int *idx = NULL;
	struct timespec cpu0;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu0);
	while (!atomic_load(&service_stop)) {
		fault_hold();
		uint64_t pass = atomic_fetch_add_explicit(&service_loops, 1, memory_order_relaxed) + 1;
		struct timespec cpu1;
		clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu1);
		AGREE_STAT(service_cpu_ns, (uint64_t)(cpu1.tv_sec - cpu0.tv_sec) * 1000000000ull +
						   (uint64_t)cpu1.tv_nsec - (uint64_t)cpu0.tv_nsec);
		cpu0 = cpu1;
		uint64_t now = agree_now_ns();
		hub_connect(now);
		expire_preauth(now);
		size_t need = (size_t)conns_live + 2;
		if (need > pcap) {
			size_t cap = pcap ? pcap : 64;
			while (cap < need)
				cap *= 2;
			struct pollfd *np = realloc(pfd, cap * sizeof(*np));
			int *ni = np ? realloc(idx, cap * sizeof(*ni)) : NULL;
			if (np)
				pfd = np;
			if (ni)
				idx = ni;
			if (!np || !ni) {
				struct timespec ts = {0, 10000000};
				nanosleep(&ts, NULL);
				continue;
			}
			pcap = cap;
		}
		size_t n = 0;
		pfd[n] = (struct pollfd){.fd = wake_fd, .events = POLLIN};
		idx[n++] = -1;
		if (listen_fd >= 0 && now >= listen_pause_until) {
			pfd[n] = (struct pollfd){.fd = listen_fd, .events = POLLIN};
			idx[n++] = -2;
		}
		bool all_polled = true;
		for (int fd = 0; fd < conns_cap; fd++) {
			struct conn *c = conns[fd];
			if (!c)
				continue;
			if (n >= pcap) {
				all_polled = false;
				break;
			}
			short ev = POLLIN;
			if (c->state == CS_CONNECTING || c->hs.len > c->hs_off ||
			    (c->state == CS_READY && c->out.len > c->out_off))
				ev |= POLLOUT;
			pfd[n] = (struct pollfd){.fd = fd, .events = ev};
			idx[n++] = fd;
		}
		int r = poll(pfd, n, live_groups || preauth_live ? 2 : 100);
		agree_registry_lock();
		if (agree_config()->fault_stall_service_ns) {
			struct timespec ts = {0, (long)(agree_config()->fault_stall_service_ns % 1000000000ull)};
			ts.tv_sec = (time_t)(agree_config()->fault_stall_service_ns / 1000000000ull);
			nanosleep(&ts, NULL);
		}
		bool blocked = agree_fault_blocked(now);
		for (size_t i = 0; r > 0 && i < n; i++) {
			if (!pfd[i].revents)
				continue;
			if (idx[i] == -1) {
				uint64_t v;
				ssize_t rr = read(wake_fd, &v, sizeof(v));
				(void)rr;
			} else if (idx[i] == -2) {
				if (!blocked)
					accept_all(now);
			} else if (!blocked) {
				struct conn *c = conns[idx[i]];
				if (!c)
					continue;
				if (c->state == CS_CONNECTING &&
				    (pfd[i].revents & (POLLOUT | POLLERR | POLLHUP))) {
					connected(c);
					if (conn_of(idx[i]) != c)
						continue;
				}
				if (pfd[i].revents & POLLOUT)
					conn_flush(c);
				if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
					conn_read(c);
			}
		}
		/* every connection with input read (a blocked network delivered nothing): what
		 * reached the sockets before this pass began is handled before the step decides */
		if (r >= 0 && all_polled)
			drained_pass = pass;
		agree_registry_unlock();
		step_comms(agree_now_ns());
		if (!blocked)
			flush_all();
		else /* test-only: a blocked network (NCCLBPF_AGREE_TEST_FAULT block_*) */
			nanosleep(&(struct timespec){0, 2000000}, NULL);
		agree_decision_log_drain(false);
	}
	free(pfd);
	free(idx);
	return NULL;
}

static void start_once_fn(void)
{
	struct rlimit rl;
	conns_limit = 16384;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < (rlim_t)conns_limit + 64)
		conns_limit = rl.rlim_cur > 128 ? (int)rl.rlim_cur - 64 : 64;
	wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
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

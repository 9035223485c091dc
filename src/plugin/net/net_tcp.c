/* The own TCP transport: devices and configuration, the control-socket progress engine and
 * the data-socket worker threads. Connection setup: net_tcp_setup.c. Protocol and design:
 * net_tcp.h. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "plugin/net/nccl_net_abi.h"
#include "plugin/net/net_log.h"
#include "plugin/net/net_tcp.h"
#include "plugin/net/net_tcp_internal.h"

#define LOGN (NET_SUBSYS_NET)

/* ---------------------------------------------------------------- configuration */

static struct tcp_config config;
static struct tcp_iface ifaces[TCP_MAX_DEVS];
static char pci_paths[TCP_MAX_DEVS][256];
static int speeds[TCP_MAX_DEVS];
static int n_ifaces = -1;
static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;

static long env_long(const char *name, long def, long lo, long hi)
{
	const char *v = net_getenv(name);
	if (!v || !*v)
		return def;
	char *end = NULL;
	errno = 0;
	long x = strtol(v, &end, 0);
	if (errno || !end || *end || x < lo || x > hi) {
		net_log(NET_WARN, LOGN, "%s=%s: not an integer in %ld..%ld, using %ld", name, v, lo,
			hi, def);
		return def;
	}
	return x;
}

static void read_config(void)
{
	config.n_data = (int)env_long("NCCLBPF_NET_NSOCKS", 2, 0, TCP_MAX_DATA_SOCKS);
	config.n_threads = (int)env_long("NCCLBPF_NET_NTHREADS", config.n_data ? config.n_data : 1,
					 1, TCP_MAX_THREADS);
	config.inline_max = (uint32_t)env_long("NCCLBPF_NET_INLINE", 64 * 1024, 0, 16 << 20);
}

const struct tcp_config *tcp_config(void)
{
	return &config;
}

const struct tcp_iface *tcp_iface_get(int dev)
{
	return dev >= 0 && dev < n_ifaces ? &ifaces[dev] : NULL;
}

static void read_sysfs(int i)
{
	char path[128], buf[64];
	snprintf(path, sizeof(path), "/sys/class/net/%.63s/device", ifaces[i].name);
	if (!realpath(path, pci_paths[i]))
		pci_paths[i][0] = '\0';
	speeds[i] = 10000;
	snprintf(path, sizeof(path), "/sys/class/net/%.63s/speed", ifaces[i].name);
	FILE *f = fopen(path, "r");
	if (f) {
		if (fgets(buf, sizeof(buf), f)) {
			long s = strtol(buf, NULL, 10);
			if (s > 0 && s < 100000000)
				speeds[i] = (int)s;
		}
		fclose(f);
	}
}

int tcp_init(void)
{
	pthread_mutex_lock(&init_lock);
	if (n_ifaces < 0) {
		read_config();
		const char *spec = net_getenv("NCCLBPF_NET_IFNAME");
		if (!spec || !*spec)
			spec = net_getenv("NCCL_SOCKET_IFNAME");
		const char *fam = net_getenv("NCCL_SOCKET_FAMILY");
		int family = 0;
		if (fam && !strcmp(fam, "AF_INET"))
			family = AF_INET;
		else if (fam && !strcmp(fam, "AF_INET6"))
			family = AF_INET6;
		n_ifaces = tcp_find_ifaces(spec, family, ifaces, TCP_MAX_DEVS);
		for (int i = 0; i < n_ifaces; i++)
			read_sysfs(i);
		char list[512] = "";
		for (int i = 0, off = 0; i < n_ifaces && off < (int)sizeof(list); i++) {
			char a[INET6_ADDRSTRLEN] = "?";
			inet_ntop(ifaces[i].family, ifaces[i].addr, a, sizeof(a));
			off += snprintf(list + off, sizeof(list) - (size_t)off, " [%d]%s:%s", i,
					ifaces[i].name, a);
		}
		if (n_ifaces == 0)
			net_log(NET_WARN, LOGN | NET_SUBSYS_INIT,
				"net: no usable interface (NCCL_SOCKET_IFNAME=%s)", spec ? spec : "");
		else
			net_log(NET_INFO, LOGN | NET_SUBSYS_INIT,
				"net: tcp transport, %d device(s):%s; %d data socket(s), %d thread(s), "
				"inline <= %u B",
				n_ifaces, list, config.n_data, config.n_threads, config.inline_max);
	}
	int n = n_ifaces;
	pthread_mutex_unlock(&init_lock);
	return n > 0 ? NB_NET_SUCCESS : NB_NET_SYSTEM_ERROR;
}

int tcp_devices(int *ndev)
{
	if (!ndev)
		return NB_NET_INVALID_ARGUMENT;
	*ndev = n_ifaces > 0 ? n_ifaces : 0;
	return NB_NET_SUCCESS;
}

int tcp_get_properties(int dev, struct nb_net_props_v12 *p)
{
	if (!p || dev < 0 || dev >= n_ifaces)
		return NB_NET_INVALID_ARGUMENT;
	memset(p, 0, sizeof(*p));
	p->name = ifaces[dev].name;
	p->pci_path = pci_paths[dev][0] ? pci_paths[dev] : NULL;
	p->guid = (uint64_t)dev;
	p->ptr_support = NB_NET_PTR_HOST;
	p->speed = speeds[dev];
	p->latency = 0;
	p->port = 0;
	p->max_comms = 65536;
	p->max_recvs = TCP_MAX_RECVS;
	p->net_device_type = NB_NET_DEVICE_HOST;
	p->net_device_version = 0;
	p->vprops.ndevs = 1;
	p->vprops.devs[0] = dev;
	p->max_p2p_bytes = NB_NET_MAX_SIZE_BYTES;
	p->max_coll_bytes = NB_NET_MAX_SIZE_BYTES;
	p->max_multi_request_size = 1;
	p->rail_id = -1;
	p->plane_id = -1;
	return NB_NET_SUCCESS;
}

/* ---------------------------------------------------------------- pure checks */

int tcp_hello_check(const struct tcp_hello *h, uint64_t listen_nonce, const char **why)
{
	const char *w = NULL;
	if (h->magic != TCP_HELLO_MAGIC)
		w = "not an ncclbpf connection (bad magic)";
	else if (h->version != TCP_PROTO_VERSION)
		w = "protocol version mismatch";
	else if (h->listen_nonce != listen_nonce)
		w = "hello for another listener";
	else if (h->n_data > TCP_MAX_DATA_SOCKS)
		w = "too many data sockets";
	else if (h->index > h->n_data)
		w = "socket index out of range";
	else if (h->n_threads < 1 || h->n_threads > TCP_MAX_THREADS)
		w = "bad thread count";
	else if (h->inline_max > (16u << 20))
		w = "bad inline size";
	if (why)
		*why = w;
	return w ? -EPROTO : 0;
}

int tcp_msg_match(const struct tcp_msg_header *h, int n, const int *tags, const size_t *sizes,
		  const bool *filled)
{
	if (h->magic != TCP_MSG_MAGIC)
		return -EPROTO;
	for (int i = 0; i < n; i++) {
		if (filled[i] || tags[i] != h->tag)
			continue;
		return h->size > sizes[i] ? -EMSGSIZE : i;
	}
	return -EPROTO;
}

int tcp_set_blocking(int fd, bool blocking)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -errno;
	fl = blocking ? (fl & ~O_NONBLOCK) : (fl | O_NONBLOCK);
	return fcntl(fd, F_SETFL, fl) < 0 ? -errno : 0;
}

void tcp_set_nodelay(int fd)
{
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

uint64_t tcp_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t tcp_random_u64(void)
{
	uint64_t x = 0;
	if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x))
		x = tcp_mono_ns() ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&x;
	return x | 1; /* never 0 */
}

static void comm_fail(struct tcp_comm *c, int code, const char *what, int err)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&c->error, &expected, code))
		return;
	net_log(NET_WARN, LOGN, "net: %s connection on dev %d: %s%s%s", c->is_send ? "send" : "receive",
		c->dev, what, err ? ": " : "", err ? strerror(err) : "");
	/* wake every worker blocked on this connection: a failed request is reported only once
	 * no worker can still write into its buffer (tcp_test waits for its parts to drain) */
	for (int i = 0; i < c->n_data; i++)
		if (c->data_fd[i] >= 0)
			shutdown(c->data_fd[i], SHUT_RDWR);
}

static int io_error_code(int err)
{
	return (err == 0 || err == ECONNRESET || err == EPIPE || err == ETIMEDOUT ||
		err == ECONNREFUSED || err == EHOSTUNREACH)
		       ? NB_NET_REMOTE_ERROR
		       : NB_NET_SYSTEM_ERROR;
}

struct tcp_comm *tcp_comm_new(bool is_send, int dev)
{
	struct tcp_comm *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->magic = TCP_COMM_MAGIC;
	c->is_send = is_send;
	c->dev = dev;
	c->ctrl_fd = -1;
	for (int i = 0; i < TCP_MAX_DATA_SOCKS; i++)
		c->data_fd[i] = -1;
	for (int i = 0; i < NB_NET_MAX_REQUESTS; i++)
		c->reqs[i].comm = c;
	return c;
}

/* ---------------------------------------------------------------- worker threads */

static void task_run(struct tcp_comm *c, struct tcp_task *t)
{
	size_t off = 0;
	while (off < t->len) {
		int failed = atomic_load_explicit(&c->error, memory_order_relaxed);
		if (failed) {
			atomic_store_explicit(&t->req->error, failed, memory_order_relaxed);
			break;
		}
		ssize_t r = t->is_send ? send(t->fd, t->ptr + off, t->len - off, MSG_NOSIGNAL)
				       : recv(t->fd, t->ptr + off, t->len - off, 0);
		if (r > 0) {
			off += (size_t)r;
			continue;
		}
		if (r < 0 && errno == EINTR)
			continue;
		int err = r == 0 ? 0 : errno;
		comm_fail(c, io_error_code(err), r == 0 ? "peer closed a data socket" : "data socket",
			  err);
		atomic_store_explicit(&t->req->error, io_error_code(err), memory_order_relaxed);
		break;
	}
	atomic_fetch_sub_explicit(&t->req->pending, 1, memory_order_release);
}

static void *worker_main(void *arg)
{
	struct tcp_worker *w = arg;
	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (w->head == w->tail && !w->stop)
			pthread_cond_wait(&w->cond, &w->lock);
		if (w->head == w->tail) {
			pthread_mutex_unlock(&w->lock);
			break;
		}
		struct tcp_task t = w->ring[w->head % TCP_RING_CAP];
		w->head++;
		pthread_mutex_unlock(&w->lock);
		task_run(w->comm, &t);
	}
	return NULL;
}

static int workers_start(struct tcp_comm *c)
{
	if (c->workers_started)
		return 0;
	for (int i = 0; i < c->n_threads; i++) {
		struct tcp_worker *w = &c->workers[i];
		if (w->started)
			continue; /* an earlier attempt got this far */
		w->comm = c;
		w->ring = malloc(sizeof(struct tcp_task) * TCP_RING_CAP);
		if (!w->ring)
			return -ENOMEM;
		pthread_mutex_init(&w->lock, NULL);
		pthread_cond_init(&w->cond, NULL);
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
			pthread_mutex_destroy(&w->lock);
			pthread_cond_destroy(&w->cond);
			free(w->ring);
			w->ring = NULL;
			return -EAGAIN;
		}
		w->started = true;
	}
	c->workers_started = true;
	return 0;
}

static void workers_stop(struct tcp_comm *c)
{
	for (int i = 0; i < c->n_threads; i++) {
		struct tcp_worker *w = &c->workers[i];
		if (!w->started)
			continue;
		pthread_mutex_lock(&w->lock);
		w->stop = true;
		w->head = w->tail; /* drop queued work: the comm is going away */
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	/* a worker blocked in send/recv on a dead or stalled peer wakes up here */
	for (int i = 0; i < c->n_data; i++)
		if (c->data_fd[i] >= 0)
			shutdown(c->data_fd[i], SHUT_RDWR);
	for (int i = 0; i < c->n_threads; i++) {
		struct tcp_worker *w = &c->workers[i];
		if (!w->started)
			continue;
		pthread_join(w->thread, NULL);
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		free(w->ring);
		w->started = false;
	}
}

/* Splits a large message over the data sockets and queues the parts (same arithmetic on
 * both ends). */
static int queue_parts(struct tcp_comm *c, struct tcp_req *r, char *ptr, size_t size)
{
	if (workers_start(c) < 0) {
		comm_fail(c, NB_NET_SYSTEM_ERROR, "cannot start worker threads", errno);
		return -1;
	}
	size_t nparts = (size + TCP_MIN_PART - 1) / TCP_MIN_PART;
	if (nparts > (size_t)c->n_data)
		nparts = (size_t)c->n_data;
	size_t part = (size + nparts - 1) / nparts;
	int first = (int)(c->large_count++ % (uint64_t)c->n_data);
	atomic_fetch_add_explicit(&r->pending, (int)nparts, memory_order_relaxed);
	for (size_t i = 0; i < nparts; i++) {
		size_t off = i * part;
		size_t len = off + part > size ? size - off : part;
		int s = (first + (int)i) % c->n_data;
		struct tcp_worker *w = &c->workers[s % c->n_threads];
		pthread_mutex_lock(&w->lock);
		w->ring[w->tail % TCP_RING_CAP] =
			(struct tcp_task){ c->data_fd[s], c->is_send, ptr + off, len, r };
		w->tail++;
		pthread_cond_signal(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	return 0;
}

/* ---------------------------------------------------------------- requests */

static struct tcp_req *req_get(struct tcp_comm *c)
{
	for (int i = 0; i < NB_NET_MAX_REQUESTS; i++) {
		struct tcp_req *r = &c->reqs[i];
		if (r->used)
			continue;
		memset(r, 0, sizeof(*r));
		r->comm = c;
		r->used = true;
		return r;
	}
	return NULL;
}

static void req_enqueue(struct tcp_comm *c, struct tcp_req *r)
{
	r->next = NULL;
	if (c->q_tail)
		c->q_tail->next = r;
	else
		c->q_head = r;
	c->q_tail = r;
}

static void req_dequeue(struct tcp_comm *c, struct tcp_req *r)
{
	struct tcp_req **pp = &c->q_head, *prev = NULL;
	while (*pp && *pp != r) {
		prev = *pp;
		pp = &(*pp)->next;
	}
	if (!*pp)
		return;
	*pp = r->next;
	if (c->q_tail == r)
		c->q_tail = prev;
}

static bool is_inline(const struct tcp_comm *c, size_t size)
{
	return c->n_data == 0 || size <= c->inline_max;
}

/* Writes queued headers and inline payloads, oldest first, until the socket would block. */
static void send_progress(struct tcp_comm *c)
{
	for (struct tcp_req *r = c->q_head; r; r = r->next) {
		if (r->ctrl_done)
			continue;
		size_t pay = is_inline(c, r->size[0]) ? r->size[0] : 0;
		size_t total = sizeof(r->hdr) + pay;
		while (r->ctrl_off < total) {
			struct iovec iov[2];
			int n = 0;
			if (r->ctrl_off < sizeof(r->hdr))
				iov[n++] = (struct iovec){ (char *)&r->hdr + r->ctrl_off,
							   sizeof(r->hdr) - r->ctrl_off };
			size_t poff = r->ctrl_off > sizeof(r->hdr) ? r->ctrl_off - sizeof(r->hdr) : 0;
			if (pay > poff)
				iov[n++] = (struct iovec){ r->data[0] + poff, pay - poff };
			struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
			ssize_t w = sendmsg(c->ctrl_fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w > 0) {
				r->ctrl_off += (size_t)w;
				continue;
			}
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			comm_fail(c, io_error_code(w < 0 ? errno : 0), "control socket", w < 0 ? errno : 0);
			return;
		}
		r->ctrl_done = true;
	}
}

static bool recv_waiting(const struct tcp_comm *c)
{
	for (const struct tcp_req *r = c->q_head; r; r = r->next)
		if (r->n_filled < r->n)
			return true;
	return false;
}

/* Reads headers and inline payloads and matches them to posted receives. */
static void recv_progress(struct tcp_comm *c)
{
	for (;;) {
		if (atomic_load_explicit(&c->error, memory_order_relaxed))
			return;
		if (c->rcur) { /* inline payload */
			struct tcp_req *r = c->rcur;
			size_t want = r->got[c->rslot] - c->rpay_off;
			if (want) {
				ssize_t n = recv(c->ctrl_fd, r->data[c->rslot] + c->rpay_off, want,
						 MSG_DONTWAIT);
				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
					return;
				if (n <= 0) {
					comm_fail(c, io_error_code(n < 0 ? errno : 0),
						  n == 0 ? "peer closed the connection" : "control socket",
						  n < 0 ? errno : 0);
					return;
				}
				c->rpay_off += (size_t)n;
				if ((size_t)n < want)
					continue;
			}
			r->n_filled++;
			c->rcur = NULL;
			c->rhdr_off = 0;
			continue;
		}
		if (c->rhdr_off < sizeof(c->rhdr)) {
			ssize_t n = recv(c->ctrl_fd, (char *)&c->rhdr + c->rhdr_off,
					 sizeof(c->rhdr) - c->rhdr_off, MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (n <= 0) {
				/* EOF between messages is only an error for receives still waiting */
				if (n == 0 && !recv_waiting(c))
					return;
				comm_fail(c, io_error_code(n < 0 ? errno : 0),
					  n == 0 ? "peer closed the connection" : "control socket",
					  n < 0 ? errno : 0);
				return;
			}
			c->rhdr_off += (size_t)n;
			continue;
		}
		/* a complete header: the oldest posted receive with an open slot of that tag */
		struct tcp_req *r = c->q_head;
		int slot = -EPROTO;
		for (; r; r = r->next) {
			slot = tcp_msg_match(&c->rhdr, r->n, r->tag, r->size, r->filled);
			if (slot != -EPROTO)
				break;
		}
		if (slot == -EMSGSIZE) {
			char what[128];
			snprintf(what, sizeof(what), "message of %llu bytes (tag %d) larger than the receive buffer",
				 (unsigned long long)c->rhdr.size, c->rhdr.tag);
			comm_fail(c, NB_NET_INVALID_USAGE, what, 0);
			return;
		}
		if (c->rhdr.magic != TCP_MSG_MAGIC) {
			comm_fail(c, NB_NET_REMOTE_ERROR, "corrupt message header", 0);
			return;
		}
		if (!r)
			return; /* its receive is not posted yet */
		r->filled[slot] = true;
		r->got[slot] = c->rhdr.size;
		if (is_inline(c, c->rhdr.size)) {
			c->rcur = r;
			c->rslot = slot;
			c->rpay_off = 0;
			continue;
		}
		if (queue_parts(c, r, r->data[slot], c->rhdr.size) < 0)
			return;
		r->n_filled++;
		c->rhdr_off = 0;
	}
}

int tcp_isend(void *send_comm, void *data, size_t size, int tag, void **req)
{
	struct tcp_comm *c = send_comm;
	if (!c || c->magic != TCP_COMM_MAGIC || !c->is_send || !req || (!data && size))
		return NB_NET_INVALID_ARGUMENT;
	*req = NULL;
	int err = atomic_load(&c->error);
	if (err)
		return err;
	struct tcp_req *r = req_get(c);
	if (!r)
		return NB_NET_SUCCESS; /* all NCCL_NET_MAX_REQUESTS in flight: NCCL retries */
	r->is_send = true;
	r->n = 1;
	r->data[0] = data;
	r->size[0] = size;
	r->tag[0] = tag;
	r->hdr = (struct tcp_msg_header){ TCP_MSG_MAGIC, tag, size };
	req_enqueue(c, r);
	if (!is_inline(c, size) && queue_parts(c, r, data, size) < 0)
		return atomic_load(&c->error);
	send_progress(c);
	*req = r;
	return NB_NET_SUCCESS;
}

int tcp_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **req)
{
	struct tcp_comm *c = recv_comm;
	if (!c || c->magic != TCP_COMM_MAGIC || c->is_send || !req || n < 1 || n > TCP_MAX_RECVS ||
	    !data || !sizes || !tags)
		return NB_NET_INVALID_ARGUMENT;
	*req = NULL;
	for (int i = 0; i < n; i++)
		if (!data[i] && sizes[i])
			return NB_NET_INVALID_ARGUMENT;
	int err = atomic_load(&c->error);
	if (err)
		return err;
	struct tcp_req *r = req_get(c);
	if (!r)
		return NB_NET_SUCCESS;
	r->n = n;
	for (int i = 0; i < n; i++) {
		r->data[i] = data[i];
		r->size[i] = sizes[i];
		r->tag[i] = tags[i];
	}
	req_enqueue(c, r);
	recv_progress(c);
	*req = r;
	return NB_NET_SUCCESS;
}

int tcp_test(void *request, int *done, int *sizes)
{
	struct tcp_req *r = request;
	if (!r || !done || !r->used)
		return NB_NET_INVALID_ARGUMENT;
	struct tcp_comm *c = r->comm;
	*done = 0;
	/* control-socket work only while this request still needs it: a request waiting for
	 * its data-socket parts costs one atomic load, not a syscall */
	bool ctrl = r->is_send ? r->ctrl_done : (r->n_filled == r->n);
	if (!ctrl) {
		if (c->is_send)
			send_progress(c);
		else
			recv_progress(c);
		ctrl = r->is_send ? r->ctrl_done : (r->n_filled == r->n);
	}
	int pending = atomic_load_explicit(&r->pending, memory_order_acquire);
	if (ctrl && pending == 0) {
		int err = atomic_load(&r->error);
		if (err)
			return err;
		*done = 1;
		if (sizes)
			for (int i = 0; i < r->n; i++) {
				size_t s = r->is_send ? r->size[i] : r->got[i];
				sizes[i] = s > (size_t)INT32_MAX ? INT32_MAX : (int)s;
			}
		req_dequeue(c, r);
		r->used = false;
		return NB_NET_SUCCESS;
	}
	/* after a failure, parts still queued or running drain quickly (their sockets are shut
	 * down); the request fails once none of them can touch its buffer any more */
	int err = atomic_load(&c->error);
	return err && pending == 0 ? err : NB_NET_SUCCESS;
}

int tcp_reg_mr(void *comm, void *data, size_t size, int type, void **mh)
{
	static int token;
	(void)data;
	(void)size;
	if (!comm || !mh)
		return NB_NET_INVALID_ARGUMENT;
	if (type != NB_NET_PTR_HOST) {
		net_log(NET_WARN, LOGN, "net: tcp transport registers host memory only (type %d)", type);
		return NB_NET_INTERNAL_ERROR;
	}
	*mh = &token;
	return NB_NET_SUCCESS;
}

int tcp_dereg_mr(void *comm, void *mh)
{
	(void)mh;
	return comm ? NB_NET_SUCCESS : NB_NET_INVALID_ARGUMENT;
}

static void comm_free(struct tcp_comm *c)
{
	workers_stop(c);
	if (c->ctrl_fd >= 0)
		close(c->ctrl_fd);
	for (int i = 0; i < TCP_MAX_DATA_SOCKS; i++)
		if (c->data_fd[i] >= 0)
			close(c->data_fd[i]);
	c->magic = 0;
	free(c);
}

int tcp_close_send(void *send_comm)
{
	struct tcp_comm *c = send_comm;
	if (!c || c->magic != TCP_COMM_MAGIC)
		return NB_NET_INVALID_ARGUMENT;
	comm_free(c);
	return NB_NET_SUCCESS;
}

int tcp_close_recv(void *recv_comm)
{
	return tcp_close_send(recv_comm);
}

void tcp_comm_opts(void *comm, struct tcp_conn_opts *out)
{
	const struct tcp_comm *c = comm;
	out->n_data = c ? c->n_data : 0;
	out->n_threads = c ? c->n_threads : 0;
}

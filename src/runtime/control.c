/* Control socket and its service thread (control.h).
 *
 * Security: the directory is created 0700 (an existing one must be a directory we own; its
 * mode is tightened to 0700), the socket is chmod 0600, and every connection's peer
 * credentials (SO_PEERCRED) must be our uid or root; others get an error reply and a WARN
 * line. Requests are read with a timeout, so a stalled client cannot hold the thread.
 *
 * Life cycle: started by the first plugin init (runtime_control_acquire), stopped and the
 * socket unlinked by the last finalize and, failing that, at exit (only by the process
 * that created it: a forked child inherits the descriptor but neither the thread nor the
 * socket). The thread blocks every signal: the application's handlers never run on it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "runtime/control_internal.h"
#include "runtime/runtime.h"

#define MAX_PROVIDERS 8
#define IO_TIMEOUT_MS 5000

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static int users;
static bool running;
static pthread_t thread;
static int listen_fd = -1, wake_rd = -1, wake_wr = -1;
/* runtime_control_kick: a non-blocking pipe (created once, kept for the process) that wakes
 * the service thread for runtime_control_set_tick's function */
static _Atomic int kick_rd = -1, kick_wr = -1;
static void (*_Atomic control_tick)(void);
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
static pid_t owner_pid;
static bool disabled_logged;

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct runtime_comm_stats *comms;
static struct {
	const char *section;
	void (*fn)(struct runtime_status_emit *e);
} providers[MAX_PROVIDERS];
static int provider_cnt;

static struct runtime_ratelimit refuse_limit;

/* ---- reply buffer ---- */

void cb_printf(struct ctl_buf *b, const char *fmt, ...)
{
	va_list ap;
	if (b->truncated)
		return;
	for (;;) {
		size_t room = b->cap - b->len;
		va_start(ap, fmt);
		int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? room : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (b->p && (size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		size_t want = b->len + (size_t)n + 1;
		if (want > NBC_MAX_REPLY) {
			b->truncated = true;
			return;
		}
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < want)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->truncated = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
}

void cb_json_str(struct ctl_buf *b, const char *s)
{
	cb_printf(b, "\"");
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			cb_printf(b, "\\%c", c);
		else if (c == '\n')
			cb_printf(b, "\\n");
		else if (c < 0x20 || c == 0x7f)
			cb_printf(b, "\\u%04x", c);
		else
			cb_printf(b, "%c", c);
	}
	cb_printf(b, "\"");
}

/* ---- directory ---- */

int runtime_control_dir(char *buf, size_t len)
{
	const char *d = getenv("NCCLBPF_CONTROL_DIR");
	int n;
	if (d && *d) {
		n = snprintf(buf, len, "%s", d);
	} else if ((d = getenv("XDG_RUNTIME_DIR")) && *d) {
		n = snprintf(buf, len, "%s/ncclbpf", d);
	} else {
		d = getenv("TMPDIR");
		n = snprintf(buf, len, "%s/ncclbpf-%u", d && *d ? d : "/tmp", (unsigned)geteuid());
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int ensure_dir(const char *dir, char *err, size_t errlen)
{
	struct stat st;
	if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
		return -errno;
	}
	if (lstat(dir, &st) != 0) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s is not a directory", dir);
		return -ENOTDIR;
	}
	if (st.st_uid != geteuid()) {
		snprintf(err, errlen, "%s belongs to uid %u, not to this process (uid %u)", dir,
			 (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if ((st.st_mode & 0777) != 0700 && chmod(dir, 0700) != 0) {
		snprintf(err, errlen, "cannot make %s mode 0700: %s", dir, strerror(errno));
		return -errno;
	}
	return 0;
}

const char *runtime_control_path(void)
{
	return running ? sock_path : "";
}

/* ---- the service thread ---- */

/* Waits for a client's socket; a stop request (finalize) interrupts it, so a stalled
 * client never delays NCCL's communicator destruction. */
static int io_wait(int fd, short ev)
{
	struct pollfd p[2] = {{fd, ev, 0}, {wake_rd, POLLIN, 0}};
	int rc;
	do
		rc = poll(p, 2, IO_TIMEOUT_MS);
	while (rc < 0 && errno == EINTR);
	if (rc > 0 && p[1].revents)
		return -ECANCELED;
	return rc > 0 ? 0 : -ETIMEDOUT;
}

static int read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		if (io_wait(fd, POLLIN))
			return -ETIMEDOUT;
		ssize_t n = read(fd, (char *)buf + got, len - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n == 0 ? -ECONNRESET : -errno;
		got += (size_t)n;
	}
	return 0;
}

static int write_full(int fd, const void *buf, size_t len)
{
	size_t put = 0;
	while (put < len) {
		if (io_wait(fd, POLLOUT))
			return -ETIMEDOUT;
		ssize_t n = send(fd, (const char *)buf + put, len - put, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -errno;
		put += (size_t)n;
	}
	return 0;
}

static void reply(int fd, uint8_t op, int status, const struct ctl_buf *b)
{
	uint8_t hdr[NBC_HEADER_SIZE];
	struct nbc_header h = {NBC_MAGIC, NBC_VERSION, op, 0, (uint32_t)(b ? b->len : 0), status};
	nbc_header_encode(&h, hdr);
	if (write_full(fd, hdr, sizeof(hdr)) == 0 && b && b->len)
		write_full(fd, b->p, b->len);
}

static void reply_error(int fd, uint8_t op, int status, const char *msg)
{
	struct ctl_buf b = {0};
	cb_printf(&b, "%s\n", msg);
	reply(fd, op, status, &b);
	free(b.p);
}

static void serve(int fd)
{
	struct ucred cred;
	socklen_t cl = sizeof(cred);
	char err[256];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0 || cl != sizeof(cred)) {
		reply_error(fd, 0, -EPERM, "cannot read the peer's credentials: refused");
		return;
	}
	if (cred.uid != geteuid() && cred.uid != 0) {
		if (runtime_ratelimit_ok(&refuse_limit, 5))
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "control: refused a request from uid %u (pid %d): only uid %u and "
				    "root may control this process", (unsigned)cred.uid, (int)cred.pid,
				    (unsigned)geteuid());
		snprintf(err, sizeof(err), "permission denied: uid %u may not control pid %d",
			 (unsigned)cred.uid, (int)getpid());
		reply_error(fd, 0, -EPERM, err);
		return;
	}
	uint8_t raw[NBC_HEADER_SIZE];
	struct nbc_header h;
	if (read_full(fd, raw, sizeof(raw)))
		return; /* nothing complete to answer */
	nbc_header_decode(raw, &h);
	int rc = nbc_check_request_header(&h, err, sizeof(err));
	if (rc) {
		reply_error(fd, h.op, rc, err);
		return;
	}
	uint8_t *payload = malloc(h.len ? h.len : 1);
	if (!payload) {
		reply_error(fd, h.op, -ENOMEM, "out of memory");
		return;
	}
	if (read_full(fd, payload, h.len)) {
		free(payload);
		reply_error(fd, h.op, -EINVAL, "truncated request");
		return;
	}
	struct nbc_request req;
	rc = nbc_parse_request(&h, payload, h.len, &req, err, sizeof(err));
	if (rc) {
		reply_error(fd, h.op, rc, err);
	} else {
		struct ctl_buf out = {0};
		rc = control_handle(&req, &out);
		if (rc < 0 && (req.flags & NBC_FLAG_JSON) && (!out.p || out.p[0] != '{')) {
			/* handlers answer errors in text: keep --json output parseable */
			struct ctl_buf j = {0};
			while (out.len && out.p[out.len - 1] == '\n')
				out.p[--out.len] = '\0';
			cb_printf(&j, "{\"ok\":false,\"status\":%d,\"message\":", rc);
			cb_json_str(&j, out.p ? out.p : "");
			cb_printf(&j, "}\n");
			free(out.p);
			out = j;
		}
		if (out.truncated)
			runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control: %s reply truncated at %u bytes",
				    nbc_op_name(req.op), NBC_MAX_REPLY);
		reply(fd, req.op, rc, &out);
		free(out.p);
	}
	free(payload);
}

/* ---- NCCLBPF_WATCH ---- */

struct watched {
	char path[4096];
	struct stat st;
	bool have;
};
static struct {
	bool on;
	char *spec;           /* under list_lock */
	bool spec_changed;
	struct watched *files;
	size_t cnt;
	int stable;           /* periods a change has been stable */
} watch;

void control_watch_set_spec(const char *spec)
{
	pthread_mutex_lock(&list_lock);
	char *c = spec ? strdup(spec) : NULL;
	if (c || !spec) {
		free(watch.spec);
		watch.spec = c;
		watch.spec_changed = true;
	}
	pthread_mutex_unlock(&list_lock);
}

static bool same_stat(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Rebuilds the file list from the spec ("a.o,b.o:prog"). Called on the thread only. */
static void watch_refresh(void)
{
	pthread_mutex_lock(&list_lock);
	char *spec = watch.spec_changed && watch.spec ? strdup(watch.spec) : NULL;
	bool changed = watch.spec_changed;
	watch.spec_changed = false;
	pthread_mutex_unlock(&list_lock);
	if (!changed)
		return;
	free(watch.files);
	watch.files = NULL;
	watch.cnt = 0;
	if (!spec)
		return;
	size_t n = 1;
	for (const char *p = spec; *p; p++)
		n += *p == ',';
	watch.files = calloc(n, sizeof(*watch.files));
	char *save = NULL;
	for (char *e = strtok_r(spec, ",", &save); e && watch.files; e = strtok_r(NULL, ",", &save)) {
		while (*e == ' ' || *e == '\t')
			e++;
		char *colon = strrchr(e, ':');
		if (colon && !strchr(colon, '/'))
			*colon = '\0';
		struct watched *w = &watch.files[watch.cnt++];
		snprintf(w->path, sizeof(w->path), "%s", e);
		w->have = stat(w->path, &w->st) == 0;
	}
	free(spec);
}

/* Once per period: a change is acted on once it has stayed unchanged for one period (a
 * compiler or copy may still be writing). */
static void watch_poll(void)
{
	struct stat now[64];
	bool have[64], differs = false;
	size_t n = watch.cnt < 64 ? watch.cnt : 64;

	watch_refresh();
	n = watch.cnt < 64 ? watch.cnt : 64;
	for (size_t i = 0; i < n; i++) {
		have[i] = stat(watch.files[i].path, &now[i]) == 0;
		if (have[i] != watch.files[i].have || (have[i] && !same_stat(&now[i], &watch.files[i].st)))
			differs = true;
	}
	if (differs) {
		/* changed since the last look: remember it and look again next period */
		for (size_t i = 0; i < n; i++) {
			watch.files[i].have = have[i];
			if (have[i])
				watch.files[i].st = now[i];
		}
		watch.stable = 1;
		return;
	}
	if (!watch.stable)
		return;
	watch.stable = 0;
	for (size_t i = 0; i < n; i++)
		if (!have[i])
			return; /* a file is missing (being replaced): wait for it */
	pthread_mutex_lock(&list_lock);
	char *spec = watch.spec ? strdup(watch.spec) : NULL;
	pthread_mutex_unlock(&list_lock);
	if (!spec)
		return;
	char *msg = malloc(65536);
	if (msg) {
		int rc = runtime_reload(spec, NB_HOOK_COUNT, 0, msg, 65536);
		if (rc < 0)
			runtime_log(NB_LOG_WARN, NB_LOG_INIT,
				    "NCCLBPF_WATCH: %s changed; reload failed, the old policy keeps "
				    "running:\n%s", spec, msg);
		else
			runtime_log(NB_LOG_INFO, NB_LOG_INIT, "NCCLBPF_WATCH: %s changed; reloaded",
				    spec);
	}
	free(msg);
	free(spec);
}

void runtime_control_set_tick(void (*fn)(void))
{
	atomic_store(&control_tick, fn);
}

void runtime_control_kick(void)
{
	char c = 2;
	int fd = atomic_load_explicit(&kick_wr, memory_order_relaxed);
	if (fd >= 0 && write(fd, &c, 1) < 0) {
		/* full pipe (EAGAIN): a wake is already pending; nothing else to do */
	}
}

static void *control_main(void *arg)
{
	(void)arg;
	for (;;) {
		struct pollfd p[3] = {{listen_fd, POLLIN, 0}, {wake_rd, POLLIN, 0},
				      {atomic_load(&kick_rd), POLLIN, 0}};
		int timeout = -1;
		struct runtime_registry_stats rs;
		runtime_registry_stats(&rs);
		if (rs.retired_pending || runtime_activation_pending())
			timeout = 20;
		if (watch.on && (timeout < 0 || timeout > 500))
			timeout = 500;
		int rc = poll(p, p[2].fd >= 0 ? 3 : 2, timeout);
		if (rc < 0 && errno != EINTR)
			break;
		if (p[1].revents)
			break; /* stop requested */
		if (rc > 0 && p[2].fd >= 0 && (p[2].revents & POLLIN)) {
			char drain[64];
			while (read(p[2].fd, drain, sizeof(drain)) > 0) {
			}
		}
		if (rc > 0 && (p[0].revents & POLLIN)) {
			int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
			if (fd >= 0) {
				serve(fd);
				close(fd);
			}
		}
		void (*tick)(void) = atomic_load(&control_tick);
		if (tick)
			tick(); /* e.g. a reload requested on another rank (tuner_reload.c) */
		runtime_activation_poll(); /* a reload activating across ranks */
		runtime_reclaim();         /* cheap when nothing is retired */
		if (watch.on)
			watch_poll();
	}
	return NULL;
}

/* ---- start / stop ---- */

static void stop_locked(void)
{
	if (!running)
		return;
	char c = 1;
	if (write(wake_wr, &c, 1) < 0) {
		/* the pipe is ours and empty: cannot fail; nothing else to do */
	}
	pthread_join(thread, NULL);
	close(listen_fd);
	close(wake_rd);
	close(wake_wr);
	listen_fd = wake_rd = wake_wr = -1;
	unlink(sock_path);
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "control socket %s removed", sock_path);
	running = false;
}

static void at_exit(void)
{
	/* only the creator removes it; the thread dies with the process */
	if (running && owner_pid == getpid())
		unlink(sock_path);
}

static void at_fork_child(void)
{
	/* the child has no service thread: forget (do not remove) the parent's socket */
	if (running) {
		close(listen_fd);
		close(wake_rd);
		close(wake_wr);
		listen_fd = wake_rd = wake_wr = -1;
		running = false;
	}
	pthread_mutex_init(&ctl_lock, NULL);
	pthread_mutex_init(&list_lock, NULL);
}

static pthread_once_t hooks_once = PTHREAD_ONCE_INIT;
static void install_hooks(void)
{
	atexit(at_exit);
	pthread_atfork(NULL, NULL, at_fork_child);
}

static int start_locked(void)
{
	char dir[sizeof(sock_path)], err[512];
	const char *off = getenv("NCCLBPF_CONTROL");
	if (off && (!strcmp(off, "off") || !strcmp(off, "0"))) {
		if (!disabled_logged)
			runtime_log(NB_LOG_INFO, NB_LOG_INIT, "control socket off (NCCLBPF_CONTROL)");
		disabled_logged = true;
		return 0;
	}
	pthread_once(&hooks_once, install_hooks);
	if (runtime_control_dir(dir, sizeof(dir) - 16) < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket disabled: directory name "
			    "too long (NCCLBPF_CONTROL_DIR)");
		return -ENAMETOOLONG;
	}
	if (ensure_dir(dir, err, sizeof(err)) < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket disabled: %s", err);
		return -EPERM;
	}
	int pn = snprintf(sock_path, sizeof(sock_path), "%.*s/%d.sock",
			  (int)(sizeof(sock_path) - 20), dir, (int)getpid());
	(void)pn; /* dir was limited to sizeof(sock_path) - 16 above */
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int pfd[2];
	if (fd < 0 || pipe2(pfd, O_CLOEXEC) != 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket disabled: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	memcpy(sa.sun_path, sock_path, strlen(sock_path) + 1);
	unlink(sock_path); /* a dead process with our pid left it */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || chmod(sock_path, 0600) != 0 ||
	    listen(fd, 16) != 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket %s disabled: %s", sock_path,
			    strerror(errno));
		close(fd);
		close(pfd[0]);
		close(pfd[1]);
		unlink(sock_path);
		return -EIO;
	}
	listen_fd = fd;
	wake_rd = pfd[0];
	wake_wr = pfd[1];
	owner_pid = getpid();
	const char *w = getenv("NCCLBPF_WATCH");
	watch.on = w && !strcmp(w, "1");
	if (watch.on && !watch.spec)
		control_watch_set_spec(getenv("NCCLBPF_POLICY"));
	if (watch.on)
		watch_refresh(); /* the files as loaded: changes from now on count */
	int kp[2]; /* created once, kept for the process (runtime_control_kick may race a stop) */
	if (atomic_load(&kick_rd) < 0 && pipe2(kp, O_CLOEXEC | O_NONBLOCK) == 0) {
		atomic_store(&kick_rd, kp[0]);
		atomic_store(&kick_wr, kp[1]);
	}
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	int rc = pthread_create(&thread, NULL, control_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket disabled: no thread (%s)",
			    strerror(rc));
		close(listen_fd);
		close(wake_rd);
		close(wake_wr);
		listen_fd = wake_rd = wake_wr = -1;
		unlink(sock_path);
		return -rc;
	}
	running = true;
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "control socket %s%s", sock_path,
		    watch.on ? " (NCCLBPF_WATCH: reloading policy files on change)" : "");
	return 0;
}

void runtime_control_acquire(void)
{
	pthread_mutex_lock(&ctl_lock);
	if (users++ == 0 && !running)
		start_locked();
	pthread_mutex_unlock(&ctl_lock);
}

void runtime_control_release(void)
{
	pthread_mutex_lock(&ctl_lock);
	if (users > 0 && --users == 0)
		stop_locked();
	pthread_mutex_unlock(&ctl_lock);
}

/* ---- communicators and status providers ---- */

void runtime_comm_register(struct runtime_comm_stats *s)
{
	pthread_mutex_lock(&list_lock);
	s->prev = NULL;
	s->next = comms;
	if (comms)
		comms->prev = s;
	comms = s;
	pthread_mutex_unlock(&list_lock);
	runtime_control_acquire();
}

void runtime_comm_unregister(struct runtime_comm_stats *s)
{
	pthread_mutex_lock(&list_lock);
	if (s->prev)
		s->prev->next = s->next;
	else if (comms == s)
		comms = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->next = s->prev = NULL;
	pthread_mutex_unlock(&list_lock);
	runtime_control_release();
}

bool runtime_comm_multi_rank(void)
{
	bool multi = false;
	pthread_mutex_lock(&list_lock);
	for (struct runtime_comm_stats *s = comms; s && !multi; s = s->next)
		multi = s->n_ranks > 1;
	pthread_mutex_unlock(&list_lock);
	return multi;
}

void control_foreach_comm(void (*fn)(const struct runtime_comm_stats *s, void *arg), void *arg)
{
	pthread_mutex_lock(&list_lock);
	for (struct runtime_comm_stats *s = comms; s; s = s->next)
		fn(s, arg);
	pthread_mutex_unlock(&list_lock);
}

void runtime_status_provider(const char *section, void (*fn)(struct runtime_status_emit *e))
{
	pthread_mutex_lock(&list_lock);
	for (int i = 0; i < provider_cnt; i++) {
		if (!strcmp(providers[i].section, section)) {
			providers[i].fn = fn;
			pthread_mutex_unlock(&list_lock);
			return;
		}
	}
	if (provider_cnt < MAX_PROVIDERS) {
		providers[provider_cnt].section = section;
		providers[provider_cnt].fn = fn;
		provider_cnt++;
	}
	pthread_mutex_unlock(&list_lock);
}

void control_foreach_provider(void (*fn)(const char *section,
					 void (*prov)(struct runtime_status_emit *e), void *arg),
			      void *arg)
{
	pthread_mutex_lock(&list_lock);
	int n = provider_cnt;
	pthread_mutex_unlock(&list_lock);
	for (int i = 0; i < n; i++)
		fn(providers[i].section, providers[i].fn, arg);
}

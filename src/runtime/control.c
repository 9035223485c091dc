/* Control socket and its service thread (control.h).
 *
 * Security: the directory rules are control_dir.c's (created 0700; an existing one is
 * used only when it is a private directory of this uid, and never changed), the socket is
 * chmod 0600, and every connection's peer credentials (SO_PEERCRED) must be our uid or
 * root; others get an error reply and a WARN line. Connections are multiplexed with
 * per-request deadlines and a bounded number of them (control_io.c), so stalled or
 * flooding clients cannot hold the thread.
 *
 * Life cycle: started by the first plugin init (runtime_control_acquire), stopped and the
 * socket unlinked by the last finalize and, failing that, at exit (only by the process
 * that created it: a forked child inherits the descriptor but neither the thread nor the
 * socket). A process killed by a signal leaves its socket: the next start in the directory
 * and `ctl list` remove sockets of dead processes (no signal handler of ours would survive
 * the host's own). The thread blocks every signal: the application's handlers never run
 * on it. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

static pthread_mutex_t ctl_lock = PTHREAD_MUTEX_INITIALIZER;
static int users;
static bool running;
static pthread_t thread;
static int listen_fd = -1, wake_rd = -1, wake_wr = -1;
/* runtime_control_kick: a non-blocking pipe (created once, kept for the process) that wakes
 * the service thread for runtime_control_set_tick's function */
static _Atomic int kick_rd = -1, kick_wr = -1;
static void (*_Atomic control_tick)(void);
static char sock_path[PATH_MAX + 32]; /* for messages: the directory's path and the name */
static char sock_name[32];            /* <pid>.sock in the directory ctl_dfd */
static int ctl_dfd = -1;
static pid_t owner_pid;
static bool disabled_logged;
/* Test only (tests/control/run_reload_newcomm.sh, docs/control.md "Testing"):
 * NCCLBPF_CONTROL_TEST_HOLD_ACTIVATION=FILE keeps this process from ending a reload
 * activation (its local commit) until FILE exists, so that a test can create a
 * communicator between the agreed switch and the commit however the threads are
 * scheduled. Only the local end waits: staging and the switch are not held. */
static const char *test_hold_activation;

static pthread_mutex_t list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct runtime_comm_stats *comms;
static struct {
	const char *section;
	void (*fn)(struct runtime_status_emit *e);
} providers[MAX_PROVIDERS];
static int provider_cnt;

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

const char *runtime_control_path(void)
{
	return running ? sock_path : "";
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
		struct pollfd p[3 + CONTROL_IO_MAX_CONNS] = {
			{control_io_listen_paused() ? -1 : listen_fd, POLLIN, 0}, {wake_rd, POLLIN, 0},
			{atomic_load(&kick_rd), POLLIN, 0}};
		int timeout = -1;
		struct runtime_registry_stats rs;
		runtime_registry_stats(&rs);
		if (rs.retired_pending || runtime_activation_pending())
			timeout = 20;
		if (watch.on && (timeout < 0 || timeout > 500))
			timeout = 500;
		int nc = control_io_pollfds(p + 3, CONTROL_IO_MAX_CONNS, &timeout);
		int rc = poll(p, 3 + (nfds_t)nc, timeout); /* a negative fd is skipped */
		if (rc < 0 && errno != EINTR)
			break;
		if (rc > 0 && p[1].revents)
			break; /* stop requested */
		if (rc > 0 && p[2].fd >= 0 && (p[2].revents & POLLIN)) {
			char drain[64];
			while (read(p[2].fd, drain, sizeof(drain)) > 0) {
			}
		}
		/* open connections first (their deadlines too), then newcomers: a request that
		 * arrived is served before a newer connection could evict it */
		control_io_events(p + 3, rc > 0 ? nc : 0);
		if (rc > 0 && p[0].fd >= 0 && (p[0].revents & POLLIN))
			control_io_accept(listen_fd);
		void (*tick)(void) = atomic_load(&control_tick);
		if (tick)
			tick(); /* e.g. a reload requested on another rank (tuner_reload.c) */
		if (test_hold_activation && access(test_hold_activation, F_OK) == 0)
			test_hold_activation = NULL;
		if (!test_hold_activation)
			runtime_activation_poll(); /* a reload activating across ranks */
		runtime_reclaim();         /* cheap when nothing is retired */
		if (watch.on)
			watch_poll();
	}
	return NULL;
}

static void control_status(struct runtime_status_emit *e)
{
	struct control_io_stats st;
	control_io_stats(&st);
	e->str(e, "socket", runtime_control_path());
	e->u64(e, "connections", st.accepted);
	e->u64(e, "connections_open", st.open);
	e->u64(e, "replies", st.served);
	e->u64(e, "refused_other_uid", st.refused);
	e->u64(e, "cut_at_deadline", st.timed_out);
	e->u64(e, "evicted", st.evicted);
	e->u64(e, "accept_emfile", st.emfile);
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
	control_io_stop();
	close(listen_fd);
	close(wake_rd);
	close(wake_wr);
	listen_fd = wake_rd = wake_wr = -1;
	unlinkat(ctl_dfd, sock_name, 0);
	close(ctl_dfd);
	ctl_dfd = -1;
	runtime_log(NB_LOG_INFO, NB_LOG_INIT, "control socket %s removed", sock_path);
	running = false;
}

static void at_exit(void)
{
	/* only the creator removes it; the thread dies with the process */
	if (running && owner_pid == getpid())
		unlinkat(ctl_dfd, sock_name, 0);
}

static void at_fork_child(void)
{
	/* the child has no service thread: forget (do not remove) the parent's socket */
	if (running) {
		close(listen_fd);
		close(wake_rd);
		close(wake_wr);
		close(ctl_dfd);
		listen_fd = wake_rd = wake_wr = ctl_dfd = -1;
		control_io_forget();
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

/* Binds and listens under a temporary name, then renames it into place: a <pid>.sock
 * always has a listener behind it (or had one: then it is stale), never one still being
 * set up, and a stale socket of a dead process with our pid is replaced atomically. */
static int bind_socket(int dfd, const char *dir, int *out_fd, char *err, size_t errlen)
{
	char tmp[48];
	struct sockaddr_un sa;
	snprintf(tmp, sizeof(tmp), ".%d.sock.tmp", (int)getpid());
	int rc = control_sockaddr(dfd, dir, tmp, &sa, err, errlen);
	if (rc < 0)
		return rc;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "socket: %s", strerror(errno));
		return rc;
	}
	unlinkat(dfd, tmp, 0); /* ours, from a dead process with our pid */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || chmod(sa.sun_path, 0600) != 0 ||
	    listen(fd, 64) != 0 || renameat(dfd, tmp, dfd, sock_name) != 0) {
		rc = -errno;
		snprintf(err, errlen, "%s/%s: %s", dir, sock_name, strerror(errno));
		close(fd);
		unlinkat(dfd, tmp, 0);
		return rc;
	}
	*out_fd = fd;
	return 0;
}

static int start_locked(void)
{
	char dir[PATH_MAX], err[PATH_MAX + 512];
	if (!runtime_env_bool("NCCLBPF_CONTROL", true)) {
		if (!disabled_logged)
			runtime_log(NB_LOG_INFO, NB_LOG_INIT, "control socket off (NCCLBPF_CONTROL)");
		disabled_logged = true;
		return 0;
	}
	pthread_once(&hooks_once, install_hooks);
	if (runtime_control_dir(dir, sizeof(dir)) < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket disabled: directory name "
			    "longer than %d bytes (NCCLBPF_CONTROL_DIR)", PATH_MAX - 1);
		return -ENAMETOOLONG;
	}
	int dfd = control_dir_open(dir, err, sizeof(err));
	if (dfd < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket disabled: %s", err);
		return dfd;
	}
	snprintf(sock_name, sizeof(sock_name), "%d.sock", (int)getpid());
	snprintf(sock_path, sizeof(sock_path), "%s/%s", dir, sock_name);
	int stale = control_dir_sweep(dfd, dir);
	if (stale)
		runtime_log(NB_LOG_INFO, NB_LOG_INIT, "control: removed %d stale socket(s) of dead "
			    "processes from %s", stale, dir);
	int fd = -1, pfd[2];
	int rc = bind_socket(dfd, dir, &fd, err, sizeof(err));
	if (rc == 0 && pipe2(pfd, O_CLOEXEC) != 0) {
		rc = -errno;
		snprintf(err, sizeof(err), "pipe: %s", strerror(errno));
		close(fd);
		unlinkat(dfd, sock_name, 0);
	}
	if (rc < 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket disabled: %s", err);
		close(dfd);
		return rc;
	}
	listen_fd = fd;
	wake_rd = pfd[0];
	wake_wr = pfd[1];
	ctl_dfd = dfd;
	owner_pid = getpid();
	watch.on = runtime_env_bool("NCCLBPF_WATCH", false);
	if (watch.on && !watch.spec)
		control_watch_set_spec(getenv("NCCLBPF_POLICY"));
	if (watch.on)
		watch_refresh(); /* the files as loaded: changes from now on count */
	int kp[2]; /* created once, kept for the process (runtime_control_kick may race a stop) */
	if (atomic_load(&kick_rd) < 0 && pipe2(kp, O_CLOEXEC | O_NONBLOCK) == 0) {
		atomic_store(&kick_rd, kp[0]);
		atomic_store(&kick_wr, kp[1]);
	}
	control_io_start();
	test_hold_activation = getenv("NCCLBPF_CONTROL_TEST_HOLD_ACTIVATION");
	if (test_hold_activation && !*test_hold_activation)
		test_hold_activation = NULL;
	runtime_status_provider("control", control_status);
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&thread, NULL, control_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "control socket disabled: no thread (%s)",
			    strerror(rc));
		control_io_stop();
		close(listen_fd);
		close(wake_rd);
		close(wake_wr);
		listen_fd = wake_rd = wake_wr = -1;
		unlinkat(ctl_dfd, sock_name, 0);
		close(ctl_dfd);
		ctl_dfd = -1;
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

static void (*_Atomic agreed_views)(uint32_t slot, uint64_t generation, runtime_agreed_view_cb cb,
				    void *arg);

void runtime_agreed_view_provider(void (*fn)(uint32_t slot, uint64_t generation,
					     runtime_agreed_view_cb cb, void *arg))
{
	atomic_store(&agreed_views, fn);
}

bool control_agreed_views(uint32_t slot, uint64_t generation, runtime_agreed_view_cb cb,
			  void *arg)
{
	void (*fn)(uint32_t, uint64_t, runtime_agreed_view_cb, void *) = atomic_load(&agreed_views);
	if (fn)
		fn(slot, generation, cb, arg);
	return fn != NULL;
}

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

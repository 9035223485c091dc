/* NCCLBPF_TRACE=DIR: one JSON-lines file per process, DIR/ncclbpf-<host>-<pid>.jsonl, one
 * object per profiler callback. Timestamps are CLOCK_MONOTONIC ns (one clock for every
 * process of a node); GPU timestamps are converted to it before they are written.
 * Lines are formatted into a per-thread buffer and written with one write(2) of whole
 * lines to an O_APPEND descriptor when the buffer fills, at most 250 ms after a completed
 * collective (so a killed job loses little), at finalize and at exit. The
 * buffer's flag is uncontended except while a flush-all from another thread runs. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin/profiler/profiler.h"
#include "runtime/runtime.h"

#define TW_BUF 65536
#define TW_LINE_MAX 1024

struct tw_buf {
	atomic_flag busy;
	size_t len;
	uint64_t last_flush_ns;
	struct tw_buf *next;
	char data[TW_BUF];
};

static pthread_mutex_t tw_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic int tw_state; /* 0 unresolved, 1 on, 2 off */
static _Atomic int tw_fd = -1;
static _Atomic unsigned tw_epoch; /* bumped by reset: thread buffers re-register */
static struct tw_buf *tw_list;
static struct tw_buf *tw_retired; /* buffers of earlier epochs (tests), kept reachable */
static char tw_path[PATH_MAX];
/* initial-exec: no __tls_get_addr, so no dependency on ld-linux (libc/pthread/dl only) */
static _Thread_local struct tw_buf *tw_mine __attribute__((tls_model("initial-exec")));
static _Thread_local unsigned tw_mine_epoch __attribute__((tls_model("initial-exec")));
static bool tw_atexit_done;

static void tw_write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
}

static void tw_flush_locked(struct tw_buf *b)
{
	int fd = atomic_load(&tw_fd);
	if (b->len && fd >= 0)
		tw_write_all(fd, b->data, b->len);
	b->len = 0;
}

void trace_writer_flush_all(void)
{
	pthread_mutex_lock(&tw_lock);
	for (struct tw_buf *b = tw_list; b; b = b->next) {
		while (atomic_flag_test_and_set_explicit(&b->busy, memory_order_acquire))
			;
		tw_flush_locked(b);
		atomic_flag_clear_explicit(&b->busy, memory_order_release);
	}
	pthread_mutex_unlock(&tw_lock);
}

static void tw_atexit(void)
{
	trace_writer_flush_all();
}

static int tw_resolve(void)
{
	int s = atomic_load_explicit(&tw_state, memory_order_acquire);
	if (s)
		return s;
	pthread_mutex_lock(&tw_lock);
	s = atomic_load(&tw_state);
	if (!s) {
		const char *dir = getenv("NCCLBPF_TRACE");
		s = 2;
		if (dir && *dir) {
			char host[128] = "host";
			gethostname(host, sizeof(host) - 1);
			host[sizeof(host) - 1] = 0;
			mkdir(dir, 0777); /* may exist */
			snprintf(tw_path, sizeof(tw_path), "%s/ncclbpf-%s-%d.jsonl", dir, host,
				 (int)getpid());
			int fd = open(tw_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (fd >= 0) {
				atomic_store(&tw_fd, fd);
				s = 1;
				if (!tw_atexit_done) {
					atexit(tw_atexit);
					tw_atexit_done = true;
				}
				char line[PATH_MAX + 256];
				int n = snprintf(line, sizeof(line),
						 "{\"ev\":\"process\",\"pid\":%d,\"host\":\"%s\","
						 "\"clock\":\"CLOCK_MONOTONIC\",\"t\":%llu}\n",
						 (int)getpid(), host,
						 (unsigned long long)profiler_now_ns());
				if (n > 0)
					tw_write_all(fd, line, (size_t)n);
				runtime_log(NB_LOG_INFO, NB_LOG_PROFILE, "trace: writing %s", tw_path);
			} else {
				runtime_log(NB_LOG_WARN, NB_LOG_PROFILE,
					    "NCCLBPF_TRACE: cannot open %s: %s", tw_path,
					    strerror(errno));
			}
		}
		atomic_store_explicit(&tw_state, s, memory_order_release);
	}
	pthread_mutex_unlock(&tw_lock);
	return s;
}

bool trace_writer_enabled(void)
{
	return tw_resolve() == 1;
}

const char *trace_writer_path(void)
{
	return tw_resolve() == 1 ? tw_path : NULL;
}

static struct tw_buf *tw_thread_buf(void)
{
	unsigned ep = atomic_load_explicit(&tw_epoch, memory_order_acquire);
	if (tw_mine && tw_mine_epoch == ep)
		return tw_mine;
	struct tw_buf *b = calloc(1, sizeof(*b));
	if (!b)
		return NULL;
	atomic_flag_clear(&b->busy);
	pthread_mutex_lock(&tw_lock);
	b->next = tw_list;
	tw_list = b;
	pthread_mutex_unlock(&tw_lock);
	tw_mine = b;
	tw_mine_epoch = ep;
	return b;
}

void trace_writer_line(const char *fmt, ...)
{
	if (tw_resolve() != 1)
		return;
	struct tw_buf *b = tw_thread_buf();
	if (!b)
		return;
	while (atomic_flag_test_and_set_explicit(&b->busy, memory_order_acquire))
		;
	if (b->len + TW_LINE_MAX > TW_BUF)
		tw_flush_locked(b);
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->data + b->len, TW_LINE_MAX - 1, fmt, ap);
	va_end(ap);
	if (n > 0) {
		size_t len = (size_t)n < TW_LINE_MAX - 2 ? (size_t)n : TW_LINE_MAX - 2;
		b->data[b->len + len] = '\n';
		b->len += len + 1;
	}
	atomic_flag_clear_explicit(&b->busy, memory_order_release);
}

void trace_writer_flush_periodic(uint64_t now_ns)
{
	if (atomic_load_explicit(&tw_state, memory_order_relaxed) != 1)
		return;
	struct tw_buf *b = tw_thread_buf();
	if (!b || now_ns - b->last_flush_ns < 250000000ull)
		return;
	while (atomic_flag_test_and_set_explicit(&b->busy, memory_order_acquire))
		;
	tw_flush_locked(b);
	b->last_flush_ns = now_ns;
	atomic_flag_clear_explicit(&b->busy, memory_order_release);
}

void trace_writer_reset_for_tests(void)
{
	trace_writer_flush_all();
	pthread_mutex_lock(&tw_lock);
	int fd = atomic_exchange(&tw_fd, -1);
	if (fd >= 0)
		close(fd);
	/* buffers stay allocated (threads may hold them); new epoch = new buffers */
	while (tw_list) {
		struct tw_buf *b = tw_list;
		tw_list = b->next;
		b->next = tw_retired;
		tw_retired = b;
	}
	atomic_fetch_add(&tw_epoch, 1);
	atomic_store(&tw_state, 0);
	pthread_mutex_unlock(&tw_lock);
}

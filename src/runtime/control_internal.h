/* Control plane internals shared by control.c (socket, thread) and control_ops.c (the
 * requests). */
#ifndef NCCLBPF_RUNTIME_CONTROL_INTERNAL_H
#define NCCLBPF_RUNTIME_CONTROL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "runtime/control.h"
#include "runtime/control_proto.h"

/* Growable reply text, capped at NBC_MAX_REPLY (then marked truncated). */
struct ctl_buf {
	char *p;
	size_t len, cap;
	bool truncated;
};
void cb_printf(struct ctl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string literal (quotes and escapes). */
void cb_json_str(struct ctl_buf *b, const char *s);

/* Runs one parsed request; the reply text goes to out. Returns the reply status. */
int control_handle(const struct nbc_request *req, struct ctl_buf *out);

/* For the status request (control.c owns the lists). */
void control_foreach_comm(void (*fn)(const struct runtime_comm_stats *s, void *arg), void *arg);
void control_foreach_provider(void (*fn)(const char *section,
					 void (*prov)(struct runtime_status_emit *e), void *arg),
			      void *arg);
/* The agreed view of an agreed map (runtime_agreed_view_provider's); false when no
 * agreement layer registered one. */
bool control_agreed_views(uint32_t slot, uint64_t generation, runtime_agreed_view_cb cb,
			  void *arg);
/* A successful full reload (no --hook) becomes what NCCLBPF_WATCH watches. */
void control_watch_set_spec(const char *spec);

/* ---- the directory (control_dir.c) ---- */
/* Opens the control directory, creating it 0700 when absent. An existing one must be a
 * real directory of this uid that group and others cannot write to; it is never changed.
 * Returns the directory's descriptor, or a negative errno with the reason in err. */
int control_dir_open(const char *dir, char *err, size_t errlen);
/* The address of NAME in the directory dfd (path dir): /proc/self/fd/<dfd>/NAME, which
 * fits sun_path for a directory of any depth, else dir/NAME when it fits (dfd -1: only
 * that). 0 or -ENAMETOOLONG with err. */
struct sockaddr_un;
int control_sockaddr(int dfd, const char *dir, const char *name, struct sockaddr_un *sa,
		     char *err, size_t errlen);
/* Removes <pid>.sock files of processes that are gone and on which nothing listens (left
 * by a SIGKILL or a SIGTERM the host did not turn into an exit). Returns how many. */
int control_dir_sweep(int dfd, const char *dir);

/* ---- connections (control_io.c), all on the service thread ---- */
struct pollfd;
void control_io_start(void);
void control_io_stop(void);
void control_io_forget(void); /* in a forked child */
/* Accepts waiting connections (each request that came with its connect is answered). */
void control_io_accept(int listen_fd);
/* Adds the connections to p (at most max), lowers *timeout_ms (-1: none) to the next
 * deadline; returns how many were added. */
int control_io_pollfds(struct pollfd *p, int max, int *timeout_ms);
/* Serves the connections with events in p[0..n), then cuts those past their deadline. */
void control_io_events(const struct pollfd *p, int n);
/* True while accepting is paused after EMFILE without a reserve descriptor. */
bool control_io_listen_paused(void);
#define CONTROL_IO_MAX_CONNS 16
struct control_io_stats {
	uint64_t accepted;  /* connections of an allowed peer */
	uint64_t refused;   /* peers of another uid (answered EPERM and closed) */
	uint64_t served;    /* replies sent whole */
	uint64_t timed_out; /* cut at their request or reply deadline */
	uint64_t evicted;   /* closed to make room for a newer connection */
	uint64_t emfile;    /* accepts that hit the descriptor limit */
	uint64_t open;      /* open now */
};
void control_io_stats(struct control_io_stats *out);

#endif

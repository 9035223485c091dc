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
/* A successful full reload (no --hook) becomes what NCCLBPF_WATCH watches. */
void control_watch_set_spec(const char *spec);

#endif

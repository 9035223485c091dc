/* A minimal HTTP/1.1 client for OTLP/HTTP export (issue 27), for the exporter's own thread
 * only: one POST per connection (Connection: close), every step non-blocking and bounded by
 * one deadline (connect, send, the response), the response read into a fixed buffer (a
 * larger one is an error), an abort flag checked at least every 50 ms. http:// only: TLS
 * would need a library (libc/libpthread/libdl are the only runtime dependencies), so an
 * https:// endpoint is refused with a message naming a local collector as the way.
 * Parsing is separate from I/O and pure (fuzzed: tests/fuzz). */
#ifndef NCCLBPF_PLUGIN_OTLP_HTTP_H
#define NCCLBPF_PLUGIN_OTLP_HTTP_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OTLP_RESP_MAX 65536 /* response head + body, bytes */

struct otlp_url {
	char host[256]; /* without brackets for IPv6 literals */
	char port[8];
	char path[1024];
	char host_header[280]; /* as sent in Host: */
};

/* http://host[:port][/path] (IPv6 as [addr]); the default path is "/". Returns 0, or
 * -EPROTONOSUPPORT (https:// or another scheme) / -EINVAL with a message. */
int otlp_url_parse(const char *url, struct otlp_url *u, char *err, size_t errlen);

struct otlp_resp {
	int status;            /* final status code (1xx interim responses skipped) */
	int64_t retry_after_s; /* Retry-After in seconds, -1 when absent or an HTTP date */
	size_t body_len;       /* body bytes in the caller's buffer (de-chunked) */
	bool body_truncated;   /* the body did not fit the buffer (the rest ignored) */
};

/* Parses the response in buf[0..len); eof: the peer has closed. Returns 1 when complete
 * (r filled, body copied to body[0..body_cap)), 0 when more bytes are needed, -EBADMSG
 * when malformed (or incomplete at eof). */
int otlp_http_parse(const char *buf, size_t len, bool eof, struct otlp_resp *r, char *body,
		    size_t body_cap);

/* An OTLP partial success in a 2xx body (ExportTrace/MetricsServiceResponse, JSON or
 * protobuf): *rejected (rejectedSpans / rejectedDataPoints) and the error message. Returns
 * 0 (nothing rejected when the body has no partialSuccess), -EBADMSG when the body is not
 * a valid encoding (then *rejected is 0 and msg empty). The message holds printable ASCII
 * only. */
int otlp_partial_success(const char *body, size_t len, bool proto, uint64_t *rejected,
			 char *msg, size_t msglen);

/* POSTs body to u. headers: extra header lines, each ending "\r\n" (may be ""). Returns 0
 * with r filled (any status), or a negative errno: -ETIMEDOUT (deadline), -ECANCELED
 * (abort set), -EBADMSG / -EMSGSIZE (bad or too large response), or the connect / send
 * error; err says what happened. */
int otlp_http_post(const struct otlp_url *u, const char *content_type, const char *headers,
		   const char *body, size_t len, int timeout_ms, const _Atomic bool *abort,
		   struct otlp_resp *r, char *resp_body, size_t resp_cap, char *err, size_t errlen);

#endif

/* Minimal HTTP/1.1 POST client and response parsers for OTLP/HTTP (otlp_http.h). */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "plugin/otlp/otlp_http.h"

#define HEAD_MAX 16384

/* ---- URL ---- */
int otlp_url_parse(const char *url, struct otlp_url *u, char *err, size_t errlen)
{
	memset(u, 0, sizeof(*u));
	if (!url || !*url) {
		snprintf(err, errlen, "empty URL");
		return -EINVAL;
	}
	if (!strncasecmp(url, "https://", 8)) {
		snprintf(err, errlen,
			 "%s: https is not supported (no TLS library in the plugin): export to a "
			 "local OpenTelemetry Collector or agent over http:// and let it forward "
			 "with TLS",
			 url);
		return -EPROTONOSUPPORT;
	}
	if (strncasecmp(url, "http://", 7)) {
		snprintf(err, errlen, "%s: not an http:// URL", url);
		return -EPROTONOSUPPORT;
	}
	const char *p = url + 7, *hs, *he;
	if (*p == '[') {
		hs = p + 1;
		he = strchr(hs, ']');
		if (!he) {
			snprintf(err, errlen, "%s: unterminated IPv6 address", url);
			return -EINVAL;
		}
		p = he + 1;
	} else {
		hs = p;
		while (*p && *p != ':' && *p != '/' && *p != '?' && *p != '#')
			p++;
		he = p;
	}
	size_t hl = (size_t)(he - hs);
	if (!hl || hl >= sizeof(u->host)) {
		snprintf(err, errlen, "%s: bad host", url);
		return -EINVAL;
	}
	for (const char *q = hs; q < he; q++)
		if ((unsigned char)*q <= ' ' || *q == '@' || *q == '"' || *q == '\\') {
			snprintf(err, errlen, "%s: bad character in the host", url);
			return -EINVAL;
		}
	memcpy(u->host, hs, hl);
	snprintf(u->port, sizeof(u->port), "80");
	if (*p == ':') {
		p++;
		unsigned long port = 0;
		size_t digits = 0;
		while (*p >= '0' && *p <= '9' && digits < 6) {
			port = port * 10 + (unsigned long)(*p++ - '0');
			digits++;
		}
		if (!digits || port == 0 || port > 65535 || (*p && *p != '/')) {
			snprintf(err, errlen, "%s: bad port", url);
			return -EINVAL;
		}
		snprintf(u->port, sizeof(u->port), "%lu", port);
	} else if (*p && *p != '/') {
		snprintf(err, errlen, "%s: bad URL after the host", url);
		return -EINVAL;
	}
	const char *path = *p ? p : "/";
	if (strlen(path) >= sizeof(u->path)) {
		snprintf(err, errlen, "%s: path too long", url);
		return -EINVAL;
	}
	for (const char *q = path; *q; q++)
		if ((unsigned char)*q <= ' ' || (unsigned char)*q >= 0x7f) {
			snprintf(err, errlen, "%s: bad character in the path", url);
			return -EINVAL;
		}
	snprintf(u->path, sizeof(u->path), "%s", path);
	bool v6 = url[7] == '[';
	bool dflt = !strcmp(u->port, "80");
	snprintf(u->host_header, sizeof(u->host_header), "%s%s%s%s%s", v6 ? "[" : "", u->host,
		 v6 ? "]" : "", dflt ? "" : ":", dflt ? "" : u->port);
	return 0;
}

/* ---- response parsing ---- */
static const char *find_crlf2(const char *p, size_t n)
{
	for (size_t i = 0; i + 3 < n; i++)
		if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n')
			return p + i;
	return NULL;
}

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool token_eq(const char *p, size_t n, const char *lit)
{
	return strlen(lit) == n && !strncasecmp(p, lit, n);
}

/* Digits only, at most 15 of them; -1 otherwise. */
static int64_t parse_dec(const char *p, size_t n)
{
	if (!n || n > 15)
		return -1;
	int64_t v = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9')
			return -1;
		v = v * 10 + (p[i] - '0');
	}
	return v;
}

struct head {
	int status;
	int64_t content_length; /* -1 none */
	bool chunked;
	int64_t retry_after;
};

/* The head in p[0..n) (n excludes the final CRLFCRLF's last CRLF). */
static int parse_head(const char *p, size_t n, struct head *h)
{
	h->content_length = -1;
	h->chunked = false;
	h->retry_after = -1;
	const char *end = p + n;
	const char *eol = memchr(p, '\r', n);
	if (!eol || eol + 1 >= end || eol[1] != '\n' || memchr(p, '\n', (size_t)(eol - p)) ||
	    (size_t)(eol - p) < 12 || memcmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') ||
	    p[8] != ' ')
		return -EBADMSG;
	for (int i = 9; i < 12; i++)
		if (p[i] < '0' || p[i] > '9')
			return -EBADMSG;
	if (eol - p > 12 && p[12] != ' ')
		return -EBADMSG;
	h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	if (h->status < 100)
		return -EBADMSG;
	const char *l = eol + 2;
	while (l < end) {
		const char *le = memchr(l, '\r', (size_t)(end - l));
		if (!le || le + 1 >= end || le[1] != '\n' || memchr(l, '\n', (size_t)(le - l)))
			return -EBADMSG;
		const char *colon = memchr(l, ':', (size_t)(le - l));
		if (!colon || colon == l)
			return -EBADMSG; /* also obsolete line folding (a line starting with space) */
		for (const char *q = l; q < colon; q++)
			if (!is_tchar(*q))
				return -EBADMSG;
		const char *v = colon + 1, *ve = le;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		for (const char *q = v; q < ve; q++)
			if ((unsigned char)*q < 0x20 && *q != '\t')
				return -EBADMSG;
		size_t nl = (size_t)(colon - l), vl = (size_t)(ve - v);
		if (token_eq(l, nl, "content-length")) {
			int64_t cl = parse_dec(v, vl);
			if (cl < 0 || (h->content_length >= 0 && h->content_length != cl))
				return -EBADMSG;
			h->content_length = cl;
		} else if (token_eq(l, nl, "transfer-encoding")) {
			/* only "chunked" (as the last coding) frames a body we can read */
			if (vl >= 7 && !strncasecmp(ve - 7, "chunked", 7))
				h->chunked = true;
			else if (!token_eq(v, vl, "identity"))
				return -EBADMSG;
		} else if (token_eq(l, nl, "retry-after")) {
			int64_t s = parse_dec(v, vl);
			h->retry_after = s < 0 ? -1 : s > 86400 ? 86400 : s;
		}
		l = le + 2;
	}
	if (h->chunked)
		h->content_length = -1; /* RFC 9112 6.3: chunked wins */
	return 0;
}

static void copy_body(struct otlp_resp *r, char *body, size_t cap, const char *src, size_t n)
{
	size_t room = cap > r->body_len ? cap - r->body_len : 0;
	size_t k = n < room ? n : room;
	if (k)
		memcpy(body + r->body_len, src, k);
	r->body_len += k;
	if (k < n)
		r->body_truncated = true;
}

/* De-chunks p[0..n): 1 complete, 0 more needed, -EBADMSG. */
static int dechunk(const char *p, size_t n, struct otlp_resp *r, char *body, size_t cap)
{
	size_t i = 0;
	for (;;) {
		uint64_t size = 0;
		size_t digits = 0;
		while (i < n) {
			char c = p[i];
			int d = c >= '0' && c <= '9' ? c - '0'
				: c >= 'a' && c <= 'f' ? c - 'a' + 10
				: c >= 'A' && c <= 'F' ? c - 'A' + 10
						     : -1;
			if (d < 0)
				break;
			if (++digits > 15)
				return -EBADMSG;
			size = size << 4 | (uint64_t)d;
			i++;
		}
		if (i >= n)
			return 0;
		if (!digits)
			return -EBADMSG;
		/* chunk extensions: skip to CRLF */
		while (i < n && p[i] != '\r') {
			if (p[i] == '\n')
				return -EBADMSG;
			i++;
		}
		if (i + 1 >= n)
			return 0;
		if (p[i + 1] != '\n')
			return -EBADMSG;
		i += 2;
		if (size == 0) {
			/* trailer fields until an empty line */
			for (;;) {
				const char *cr = memchr(p + i, '\r', n - i);
				if (!cr || (size_t)(cr - p) + 1 >= n)
					return 0;
				if (cr[1] != '\n')
					return -EBADMSG;
				bool empty = cr == p + i;
				i = (size_t)(cr - p) + 2;
				if (empty)
					return 1;
			}
		}
		if (size > n - i || n - i - size < 2)
			return 0;
		copy_body(r, body, cap, p + i, size);
		i += size;
		if (p[i] != '\r' || p[i + 1] != '\n')
			return -EBADMSG;
		i += 2;
	}
}

int otlp_http_parse(const char *buf, size_t len, bool eof, struct otlp_resp *r, char *body,
		    size_t body_cap)
{
	size_t pos = 0;
	for (;;) {
		memset(r, 0, sizeof(*r));
		r->retry_after_s = -1;
		const char *e = find_crlf2(buf + pos, len - pos);
		if (!e) {
			if (len - pos > HEAD_MAX || eof)
				return -EBADMSG;
			return 0;
		}
		size_t head_len = (size_t)(e - (buf + pos)) + 2;
		if (head_len > HEAD_MAX)
			return -EBADMSG;
		struct head h;
		int rc = parse_head(buf + pos, head_len, &h);
		if (rc)
			return rc;
		size_t b = (size_t)(e - buf) + 4;
		if (h.status >= 100 && h.status < 200) {
			if (h.status == 101)
				return -EBADMSG; /* nobody asked to switch protocols */
			pos = b;            /* an interim response: the final one follows */
			continue;
		}
		r->status = h.status;
		r->retry_after_s = h.retry_after;
		if (h.status == 204 || h.status == 304)
			return 1;
		if (h.chunked) {
			rc = dechunk(buf + b, len - b, r, body, body_cap);
			if (rc == 0 && eof)
				return -EBADMSG;
			return rc;
		}
		if (h.content_length >= 0) {
			if ((uint64_t)h.content_length > len - b)
				return eof ? -EBADMSG : 0;
			copy_body(r, body, body_cap, buf + b, (size_t)h.content_length);
			return 1;
		}
		if (!eof)
			return 0; /* delimited by the end of the connection */
		copy_body(r, body, body_cap, buf + b, len - b);
		return 1;
	}
}

/* ---- partial success: JSON ---- */
struct jw {
	const char *p, *end;
	uint64_t *rejected;
	char *msg;
	size_t msglen;
};

static void jw_ws(struct jw *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\r' || *j->p == '\n'))
		j->p++;
}

/* A string; its content (escapes kept as they are) into out when out != NULL. */
static int jw_string(struct jw *j, char *out, size_t cap, const char **s, size_t *sl)
{
	if (j->p >= j->end || *j->p != '"')
		return -EBADMSG;
	j->p++;
	const char *start = j->p;
	size_t k = 0;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		if (c < 0x20)
			return -EBADMSG;
		if (c == '\\') {
			if (++j->p >= j->end || !strchr("\"\\/bfnrtu", *j->p))
				return -EBADMSG;
			if (*j->p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (j->p + i >= j->end || !strchr("0123456789abcdefABCDEF", j->p[i]) ||
					    !j->p[i])
						return -EBADMSG;
				j->p += 4;
				c = '?';
			} else {
				c = (unsigned char)*j->p;
			}
		}
		if (out && k + 1 < cap)
			out[k++] = (char)c;
		j->p++;
	}
	if (j->p >= j->end)
		return -EBADMSG;
	if (s) {
		*s = start;
		*sl = (size_t)(j->p - start);
	}
	if (out && cap)
		out[k] = 0;
	j->p++;
	return 0;
}

static bool jw_digits(struct jw *j)
{
	const char *s = j->p;
	while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
		j->p++;
	return j->p > s;
}

/* -?digits(.digits)?([eE][+-]?digits)? ; *v: its value when it is a plain integer, else 0 */
static int jw_number(struct jw *j, uint64_t *v)
{
	const char *s = j->p;
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (!jw_digits(j))
		return -EBADMSG;
	if (j->p < j->end && *j->p == '.') {
		j->p++;
		if (!jw_digits(j))
			return -EBADMSG;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (!jw_digits(j))
			return -EBADMSG;
	}
	if (v) {
		int64_t d = parse_dec(s, (size_t)(j->p - s));
		*v = d > 0 ? (uint64_t)d : 0;
	}
	return 0;
}

/* level: 0 root, 1 inside partialSuccess, 2 elsewhere */
static int jw_value(struct jw *j, int level, int depth)
{
	if (depth > 32)
		return -EBADMSG;
	jw_ws(j);
	if (j->p >= j->end)
		return -EBADMSG;
	char c = *j->p;
	if (c == '{' || c == '[') {
		bool obj = c == '{';
		j->p++;
		jw_ws(j);
		if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
			j->p++;
			return 0;
		}
		for (;;) {
			int child = 2;
			if (obj) {
				jw_ws(j);
				const char *k;
				size_t kl;
				if (jw_string(j, NULL, 0, &k, &kl))
					return -EBADMSG;
				jw_ws(j);
				if (j->p >= j->end || *j->p != ':')
					return -EBADMSG;
				j->p++;
				jw_ws(j);
				if (level == 0 && kl == 14 && !memcmp(k, "partialSuccess", 14)) {
					child = 1;
				} else if (level == 1 && ((kl == 13 && !memcmp(k, "rejectedSpans", 13)) ||
							  (kl == 18 &&
							   !memcmp(k, "rejectedDataPoints", 18)))) {
					uint64_t v = 0;
					int rc = j->p < j->end && *j->p == '"'
							 ? 0
							 : jw_number(j, &v);
					if (rc)
						return rc;
					if (j->p < j->end && *j->p == '"') {
						const char *s;
						size_t sl;
						if (jw_string(j, NULL, 0, &s, &sl))
							return -EBADMSG;
						int64_t d = parse_dec(s, sl);
						v = d > 0 ? (uint64_t)d : 0;
					}
					*j->rejected = v;
					goto next;
				} else if (level == 1 && kl == 12 && !memcmp(k, "errorMessage", 12)) {
					if (j->p < j->end && *j->p == '"') {
						if (jw_string(j, j->msg, j->msglen, NULL, NULL))
							return -EBADMSG;
						goto next;
					}
				}
			}
			if (jw_value(j, child, depth + 1))
				return -EBADMSG;
		next:
			jw_ws(j);
			if (j->p >= j->end)
				return -EBADMSG;
			if (*j->p == ',') {
				j->p++;
				continue;
			}
			if (*j->p == (obj ? '}' : ']')) {
				j->p++;
				return 0;
			}
			return -EBADMSG;
		}
	}
	if (c == '"')
		return jw_string(j, NULL, 0, NULL, NULL);
	if (c == 't' || c == 'f' || c == 'n') {
		const char *lit = c == 't' ? "true" : c == 'f' ? "false" : "null";
		size_t n = strlen(lit);
		if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n))
			return -EBADMSG;
		j->p += n;
		return 0;
	}
	return jw_number(j, NULL);
}

/* ---- partial success: protobuf ---- */
static int pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	*v = 0;
	for (int s = 0; s < 64; s += 7) {
		if (*p >= end)
			return -EBADMSG;
		uint8_t b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << s;
		if (!(b & 0x80))
			return 0;
	}
	return -EBADMSG;
}

/* Walks a message; in_partial: fields of ExportPartialSuccess. */
static int pb_walk(const uint8_t *p, const uint8_t *end, bool in_partial, uint64_t *rejected,
		   char *msg, size_t msglen)
{
	while (p < end) {
		uint64_t tag, v;
		if (pb_varint(&p, end, &tag))
			return -EBADMSG;
		uint32_t field = (uint32_t)(tag >> 3);
		if (field == 0 || (tag >> 3) > 0x1fffffff)
			return -EBADMSG;
		switch (tag & 7) {
		case 0:
			if (pb_varint(&p, end, &v))
				return -EBADMSG;
			if (in_partial && field == 1)
				*rejected = (int64_t)v > 0 ? v : 0;
			break;
		case 1:
			if (end - p < 8)
				return -EBADMSG;
			p += 8;
			break;
		case 5:
			if (end - p < 4)
				return -EBADMSG;
			p += 4;
			break;
		case 2:
			if (pb_varint(&p, end, &v) || v > (uint64_t)(end - p))
				return -EBADMSG;
			if (!in_partial && field == 1) {
				if (pb_walk(p, p + v, true, rejected, msg, msglen))
					return -EBADMSG;
			} else if (in_partial && field == 2 && msglen) {
				size_t k = v < msglen - 1 ? (size_t)v : msglen - 1;
				for (size_t i = 0; i < k; i++)
					msg[i] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
				msg[k] = 0;
			}
			p += v;
			break;
		default:
			return -EBADMSG;
		}
	}
	return 0;
}

int otlp_partial_success(const char *body, size_t len, bool proto, uint64_t *rejected,
			 char *msg, size_t msglen)
{
	*rejected = 0;
	if (msglen)
		msg[0] = 0;
	if (proto)
		return pb_walk((const uint8_t *)body, (const uint8_t *)body + len, false, rejected,
			       msg, msglen);
	struct jw j = {body, body + len, rejected, msg, msglen};
	jw_ws(&j);
	if (j.p == j.end)
		return 0; /* an empty body: full success */
	int rc = jw_value(&j, 0, 0);
	jw_ws(&j);
	if (rc || j.p != j.end) {
		/* the message may hold a part of a string cut by the error, raw bytes included
		 * (fuzz_otlp): nothing of a body that does not parse is passed on */
		*rejected = 0;
		if (msglen)
			msg[0] = 0;
		return -EBADMSG;
	}
	for (size_t i = 0; msglen && msg[i]; i++)
		if ((unsigned char)msg[i] < 0x20 || (unsigned char)msg[i] >= 0x7f)
			msg[i] = '?';
	return 0;
}

/* ---- I/O ---- */
static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Waits for events on fd until the deadline, in slices that check abort. 1 ready, or
 * -ETIMEDOUT / -ECANCELED / -errno. */
static int wait_fd(int fd, short events, uint64_t deadline, const _Atomic bool *abort)
{
	for (;;) {
		if (abort && atomic_load_explicit(abort, memory_order_relaxed))
			return -ECANCELED;
		uint64_t now = now_ms();
		if (now >= deadline)
			return -ETIMEDOUT;
		uint64_t left = deadline - now;
		struct pollfd pfd = {fd, events, 0};
		int n = poll(&pfd, 1, left > 50 ? 50 : (int)left);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0)
			return 1;
	}
}

static int connect_one(const struct addrinfo *ai, uint64_t deadline, const _Atomic bool *abort)
{
	int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			ai->ai_protocol);
	if (fd < 0)
		return -errno;
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		if (errno != EINPROGRESS) {
			int e = -errno;
			close(fd);
			return e;
		}
		int rc = wait_fd(fd, POLLOUT, deadline, abort);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);
		if (rc == 1 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) != 0)
			soerr = errno;
		if (rc != 1 || soerr) {
			close(fd);
			return rc != 1 ? rc : -soerr;
		}
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n, uint64_t deadline, const _Atomic bool *abort)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		int rc = wait_fd(fd, POLLOUT, deadline, abort);
		if (rc != 1)
			return rc;
	}
	return 0;
}

int otlp_http_post(const struct otlp_url *u, const char *content_type, const char *headers,
		   const char *body, size_t len, int timeout_ms, const _Atomic bool *abort,
		   struct otlp_resp *r, char *resp_body, size_t resp_cap, char *err, size_t errlen)
{
	uint64_t deadline = now_ms() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 1);
	struct addrinfo hints = {0}, *res = NULL;
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	int g = getaddrinfo(u->host, u->port, &hints, &res);
	if (g) {
		snprintf(err, errlen, "cannot resolve %s: %s", u->host, gai_strerror(g));
		return -EHOSTUNREACH;
	}
	int fd = -ECONNREFUSED;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = connect_one(ai, deadline, abort);
		if (fd >= 0 || fd == -ETIMEDOUT || fd == -ECANCELED)
			break;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		snprintf(err, errlen, "cannot connect to %s:%s: %s", u->host, u->port,
			 fd == -ETIMEDOUT ? "timed out" : strerror(-fd));
		return fd;
	}
	char *head = malloc(2048 + strlen(headers));
	char *buf = malloc(OTLP_RESP_MAX);
	int rc = -ENOMEM;
	if (!head || !buf) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	int hl = sprintf(head,
			 "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: ncclbpf-otlp\r\n"
			 "Content-Type: %s\r\nContent-Length: %zu\r\nConnection: close\r\n%s\r\n",
			 u->path, u->host_header, content_type, len, headers);
	rc = send_all(fd, head, (size_t)hl, deadline, abort);
	if (!rc)
		rc = send_all(fd, body, len, deadline, abort);
	if (rc) {
		snprintf(err, errlen, "sending to %s:%s: %s", u->host, u->port,
			 rc == -ETIMEDOUT ? "timed out" : strerror(-rc));
		goto out;
	}
	/* the request is out: the peer's half-close is not needed (Content-Length frames it) */
	size_t got = 0;
	for (;;) {
		bool eof = false;
		if (got == OTLP_RESP_MAX) {
			rc = -EMSGSIZE;
			snprintf(err, errlen, "response from %s:%s larger than %d bytes", u->host,
				 u->port, OTLP_RESP_MAX);
			goto out;
		}
		ssize_t n = recv(fd, buf + got, OTLP_RESP_MAX - got, 0);
		if (n > 0)
			got += (size_t)n;
		else if (n == 0)
			eof = true;
		else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
			rc = -errno;
			snprintf(err, errlen, "reading from %s:%s: %s", u->host, u->port,
				 strerror(errno));
			goto out;
		}
		if (n > 0) {
			int p = otlp_http_parse(buf, got, false, r, resp_body, resp_cap);
			if (p == 1) {
				rc = 0;
				goto out;
			}
			if (p < 0) {
				rc = p;
				snprintf(err, errlen, "malformed HTTP response from %s:%s", u->host,
					 u->port);
				goto out;
			}
			continue;
		}
		if (eof) {
			int p = otlp_http_parse(buf, got, true, r, resp_body, resp_cap);
			rc = p == 1 ? 0 : -EBADMSG;
			if (rc)
				snprintf(err, errlen, "%s from %s:%s",
					 got ? "malformed or truncated HTTP response"
					     : "connection closed without a response",
					 u->host, u->port);
			goto out;
		}
		int w = wait_fd(fd, POLLIN, deadline, abort);
		if (w != 1) {
			rc = w;
			snprintf(err, errlen, "waiting for %s:%s: %s", u->host, u->port,
				 w == -ETIMEDOUT ? "timed out" : strerror(-w));
			goto out;
		}
	}
out:
	free(head);
	free(buf);
	close(fd);
	return rc;
}

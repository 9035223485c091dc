/* Parsers of the OTEL_* list variables (otlp.h): headers and resource attributes, both
 * "key=value" pairs separated by commas with percent-encoded values (W3C Baggage style, as
 * the OpenTelemetry specification says). Anything that could break the HTTP request
 * (header injection, framing headers) is refused with a message. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "plugin/otlp/otlp.h"

#define MAX_HEADERS 32
#define MAX_HEADER_BYTES 4096
#define MAX_RESOURCE_FROM_ENV 32

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* Percent-decodes s[0..n) into out (NUL-terminated). -EINVAL on a bad escape, a decoded
 * control byte (< 0x20 or 0x7f, NUL included) or no room. */
static int pct_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -EINVAL;
			int h = hexval(s[i + 1]), l = hexval(s[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = (unsigned char)(h << 4 | l);
			i += 2;
		}
		if (c < 0x20 || c == 0x7f)
			return -EINVAL;
		if (k + 1 >= cap)
			return -EINVAL;
		out[k++] = (char)c;
	}
	out[k] = 0;
	return 0;
}

static void trim(const char **s, const char **e)
{
	while (*s < *e && (**s == ' ' || **s == '\t'))
		(*s)++;
	while (*e > *s && ((*e)[-1] == ' ' || (*e)[-1] == '\t'))
		(*e)--;
}

static bool is_tchar(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* Calls fn for each "key=value" item (keys and values trimmed, empty items skipped). */
static int each_pair(const char *s, int (*fn)(const char *k, size_t kl, const char *v,
					       size_t vl, void *arg, char *err, size_t errlen),
		     void *arg, char *err, size_t errlen)
{
	if (!s)
		return 0;
	const char *p = s;
	while (*p) {
		const char *e = strchr(p, ',');
		if (!e)
			e = p + strlen(p);
		const char *is = p, *ie = e;
		trim(&is, &ie);
		if (is < ie) {
			const char *eq = memchr(is, '=', (size_t)(ie - is));
			if (!eq) {
				snprintf(err, errlen, "\"%.*s\" is not key=value", (int)(ie - is > 64 ? 64 : ie - is), is);
				return -EINVAL;
			}
			const char *ks = is, *ke = eq, *vs = eq + 1, *ve = ie;
			trim(&ks, &ke);
			trim(&vs, &ve);
			if (ks == ke) {
				snprintf(err, errlen, "an empty key");
				return -EINVAL;
			}
			int rc = fn(ks, (size_t)(ke - ks), vs, (size_t)(ve - vs), arg, err, errlen);
			if (rc)
				return rc;
		}
		p = *e ? e + 1 : e;
	}
	return 0;
}

struct hdr_out {
	char *out;
	size_t cap, len;
	int n;
};

static int one_header(const char *k, size_t kl, const char *v, size_t vl, void *arg, char *err,
		      size_t errlen)
{
	struct hdr_out *h = arg;
	for (size_t i = 0; i < kl; i++)
		if (!is_tchar(k[i])) {
			snprintf(err, errlen, "header name \"%.*s\" is not an HTTP token",
				 (int)(kl > 64 ? 64 : kl), k);
			return -EINVAL;
		}
	static const char *const framing[] = {"host", "content-length", "content-type",
					      "connection", "transfer-encoding", "expect",
					      "upgrade", "te"};
	for (size_t i = 0; i < sizeof(framing) / sizeof(framing[0]); i++)
		if (strlen(framing[i]) == kl && !strncasecmp(k, framing[i], kl)) {
			snprintf(err, errlen, "header %.*s is set by the exporter itself", (int)kl, k);
			return -EINVAL;
		}
	char val[MAX_HEADER_BYTES];
	if (pct_decode(v, vl, val, sizeof(val))) {
		snprintf(err, errlen,
			 "header %.*s: bad percent-encoding or a control character in the value",
			 (int)(kl > 64 ? 64 : kl), k);
		return -EINVAL;
	}
	if (++h->n > MAX_HEADERS) {
		snprintf(err, errlen, "more than %d headers", MAX_HEADERS);
		return -EINVAL;
	}
	int w = snprintf(h->out + h->len, h->cap - h->len, "%.*s: %s\r\n", (int)kl, k, val);
	if (w < 0 || (size_t)w >= h->cap - h->len || h->len + (size_t)w > MAX_HEADER_BYTES) {
		snprintf(err, errlen, "headers longer than %d bytes", MAX_HEADER_BYTES);
		return -EINVAL;
	}
	h->len += (size_t)w;
	return 0;
}

int otlp_parse_headers(const char *s, char *out, size_t cap, char *err, size_t errlen)
{
	if (!cap)
		return -EINVAL;
	out[0] = 0;
	struct hdr_out h = {out, cap, 0, 0};
	int rc = each_pair(s, one_header, &h, err, errlen);
	if (rc) {
		out[0] = 0;
		return rc;
	}
	return h.n;
}

static int one_attr(const char *k, size_t kl, const char *v, size_t vl, void *arg, char *err,
		    size_t errlen)
{
	struct otlp_resource *r = arg;
	if (r->n >= MAX_RESOURCE_FROM_ENV) {
		snprintf(err, errlen, "more than %d attributes", MAX_RESOURCE_FROM_ENV);
		return -EINVAL;
	}
	struct otlp_kv *kv = &r->attrs[r->n];
	if (pct_decode(k, kl, kv->key, sizeof(kv->key)) ||
	    pct_decode(v, vl, kv->value, sizeof(kv->value))) {
		snprintf(err, errlen,
			 "attribute \"%.*s\": bad percent-encoding, a control character, or longer "
			 "than %zu / %zu bytes",
			 (int)(kl > 64 ? 64 : kl), k, sizeof(kv->key) - 1, sizeof(kv->value) - 1);
		return -EINVAL;
	}
	/* keys are unique in OTLP: a repeated one replaces the earlier value */
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->attrs[i].key, kv->key)) {
			memcpy(r->attrs[i].value, kv->value, sizeof(kv->value));
			return 0;
		}
	r->n++;
	return 0;
}

int otlp_parse_resource(const char *s, struct otlp_resource *r, char *err, size_t errlen)
{
	struct otlp_resource tmp = *r;
	int rc = each_pair(s, one_attr, &tmp, err, errlen);
	if (rc)
		return rc;
	*r = tmp;
	return 0;
}

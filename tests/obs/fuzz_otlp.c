/* libFuzzer target for what the OTLP exporter reads or builds from outside input (issue
 * 27): the collector's HTTP response and its partial-success body (JSON and protobuf), the
 * OTEL_EXPORTER_OTLP_HEADERS and OTEL_RESOURCE_ATTRIBUTES parsers, and the encoder given
 * hostile strings (invalid UTF-8, quotes, control bytes). The first byte picks the part.
 * Checks beyond "no crash": a complete response has a status and a body within the buffer;
 * parsing never completes without the peer's close and then fails with it; header lines
 * carry no CR/LF but their own end; accepted attributes hold no control bytes; the JSON
 * encoding is strict JSON and valid UTF-8, the protobuf encoding a well-formed message.
 * In every build it replays tests/obs/corpus (fuzz_replay.c). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_mini.h"
#include "plugin/otlp/otlp.h"
#include "plugin/otlp/otlp_enc.h"
#include "plugin/otlp/otlp_http.h"

#define REQUIRE(c)                                                                          \
	do {                                                                                \
		if (!(c))                                                                   \
			abort();                                                            \
	} while (0)

static void http(const char *buf, size_t n)
{
	char body[256];
	struct otlp_resp r, r2;
	int a = otlp_http_parse(buf, n, false, &r, body, sizeof(body));
	int b = otlp_http_parse(buf, n, true, &r2, body, sizeof(body));
	REQUIRE(a == 1 || a == 0 || a == -EBADMSG);
	REQUIRE(b == 1 || b == -EBADMSG);
	if (a == 1) { /* complete without the close: the close changes nothing */
		REQUIRE(b == 1 && r.status == r2.status && r.body_len == r2.body_len);
		REQUIRE(r.status >= 200 && r.status <= 999 && r.body_len <= sizeof(body));
	}
	if (b == 1)
		REQUIRE(r2.body_len <= sizeof(body));
	for (int proto = 0; proto < 2; proto++) {
		uint64_t rej;
		char msg[64];
		int rc = otlp_partial_success(buf, n, proto, &rej, msg, sizeof(msg));
		REQUIRE(rc == 0 || rc == -EBADMSG);
		REQUIRE(strlen(msg) < sizeof(msg));
		for (size_t i = 0; msg[i]; i++)
			REQUIRE((unsigned char)msg[i] >= 0x20 && (unsigned char)msg[i] < 0x7f);
	}
}

static void headers(const char *s)
{
	char out[5000], err[200];
	int n = otlp_parse_headers(s, out, sizeof(out), err, sizeof(err));
	if (n < 0) {
		REQUIRE(out[0] == 0);
		return;
	}
	int lines = 0;
	for (const char *p = out; *p; lines++) {
		const char *e = strstr(p, "\r\n");
		REQUIRE(e);
		for (const char *q = p; q < e; q++)
			REQUIRE(*q != '\r' && *q != '\n' && *q != 0);
		REQUIRE(memchr(p, ':', (size_t)(e - p)));
		p = e + 2;
	}
	REQUIRE(lines == n);
}

static void resource(const char *s)
{
	struct otlp_resource r = {.n = 0};
	char err[200];
	if (otlp_parse_resource(s, &r, err, sizeof(err)) == 0)
		for (int i = 0; i < r.n; i++) {
			for (const char *q = r.attrs[i].key; *q; q++)
				REQUIRE((unsigned char)*q >= 0x20 && *q != 0x7f);
			for (const char *q = r.attrs[i].value; *q; q++)
				REQUIRE((unsigned char)*q >= 0x20 && *q != 0x7f);
		}
	else
		REQUIRE(r.n == 0);
}

static bool utf8_ok(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
		if (!k || i + k > n)
			return false;
		for (size_t j = 1; j < k; j++)
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
		i += k;
	}
	return true;
}

/* A well-formed protobuf message: every field's tag and length fit, recursively where a
 * length-delimited field is itself a message (depth-limited). */
static bool pb_ok(const uint8_t *p, const uint8_t *end, int depth)
{
	while (p < end) {
		uint64_t tag = 0, v = 0;
		int s = 0;
		do {
			if (p >= end || s > 63)
				return false;
			tag |= (uint64_t)(*p & 0x7f) << s;
			s += 7;
		} while (*p++ & 0x80);
		if ((tag >> 3) == 0)
			return false;
		switch (tag & 7) {
		case 0:
			s = 0;
			do {
				if (p >= end || s > 63)
					return false;
				s += 7;
			} while (*p++ & 0x80);
			break;
		case 1:
			if (end - p < 8)
				return false;
			p += 8;
			break;
		case 2:
			s = 0;
			do {
				if (p >= end || s > 63)
					return false;
				v |= (uint64_t)(*p & 0x7f) << s;
				s += 7;
			} while (*p++ & 0x80);
			if (v > (uint64_t)(end - p))
				return false;
			(void)depth;
			p += v;
			break;
		default:
			return false;
		}
	}
	return p == end;
}

static void encoder(const uint8_t *d, size_t n)
{
	for (int fmt = 0; fmt < 2; fmt++) {
		struct otlp_enc e;
		otlp_enc_init(&e, fmt ? OTLP_FMT_PROTO : OTLP_FMT_JSON, 1 << 20);
		otlp_arr_begin(&e, 1, "resourceSpans");
		otlp_elem_begin(&e);
		otlp_msg_begin(&e, 1, "resource");
		otlp_arr_begin(&e, 1, "attributes");
		size_t half = n / 2;
		char *a = malloc(half + 1), *b = malloc(n - half + 1);
		memcpy(a, d, half);
		a[half] = 0;
		memcpy(b, d + half, n - half);
		b[n - half] = 0;
		otlp_attr_str(&e, a, b);
		otlp_attr_int(&e, b, (int64_t)n - 1000);
		otlp_arr_end(&e);
		otlp_msg_end(&e);
		otlp_strn(&e, 3, "schemaUrl", (const char *)d, n);
		otlp_hex_bytes(&e, 4, "id", d, n < 16 ? n : 16);
		double dv[3] = {(double)n, -0.0, 1e300 * 1e300};
		otlp_packed_double(&e, 5, "d", dv, 3);
		uint64_t uv[2] = {n, ~0ull};
		otlp_packed_fixed64(&e, 6, "u", uv, 2);
		otlp_elem_end(&e);
		otlp_arr_end(&e);
		free(a);
		free(b);
		char *out;
		size_t len;
		int rc = otlp_enc_finish(&e, &out, &len);
		REQUIRE(rc == 0);
		if (fmt) {
			REQUIRE(pb_ok((const uint8_t *)out, (const uint8_t *)out + len, 0));
		} else {
			REQUIRE(utf8_ok((const unsigned char *)out, len));
			char *z = malloc(len + 1), err[128];
			memcpy(z, out, len);
			z[len] = 0;
			struct jm *j = jm_parse(z, err, sizeof(err));
			REQUIRE(j);
			jm_free(j);
			free(z);
		}
		free(out);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = 0;
	switch (data[0] % 4) {
	case 0: http(s, size - 1); break;
	case 1: headers(s); break;
	case 2: resource(s); break;
	default: encoder(data + 1, size - 1); break;
	}
	free(s);
	return 0;
}

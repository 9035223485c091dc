/* OTLP encoder: JSON and protobuf from the same calls (otlp_enc.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/otlp/otlp_enc.h"

#define WT_VARINT 0u
#define WT_I64 1u
#define WT_LEN 2u

static void fail(struct otlp_enc *e, int err)
{
	if (!e->failed)
		e->err = err;
	e->failed = true;
}

static bool reserve(struct otlp_enc *e, size_t n)
{
	if (e->failed)
		return false;
	if (n > e->limit || e->len > e->limit - n) {
		fail(e, -ENOSPC);
		return false;
	}
	if (e->len + n <= e->cap)
		return true;
	size_t cap = e->cap ? e->cap : 4096;
	while (cap < e->len + n)
		cap *= 2;
	if (cap > e->limit)
		cap = e->limit;
	char *b = realloc(e->buf, cap);
	if (!b) {
		fail(e, -ENOMEM);
		return false;
	}
	e->buf = b;
	e->cap = cap;
	return true;
}

static void put(struct otlp_enc *e, const void *p, size_t n)
{
	if (reserve(e, n)) {
		memcpy(e->buf + e->len, p, n);
		e->len += n;
	}
}

static void putc1(struct otlp_enc *e, char c)
{
	put(e, &c, 1);
}

static void puts0(struct otlp_enc *e, const char *s)
{
	put(e, s, strlen(s));
}

static size_t varint(uint8_t *out, uint64_t v)
{
	size_t n = 0;
	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

static void put_varint(struct otlp_enc *e, uint64_t v)
{
	uint8_t b[10];
	put(e, b, varint(b, v));
}

static void put_tag(struct otlp_enc *e, uint32_t field, unsigned wt)
{
	put_varint(e, (uint64_t)field << 3 | wt);
}

static void put_le64(struct otlp_enc *e, uint64_t v)
{
	uint8_t b[8];
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(e, b, 8);
}

/* ---- UTF-8: the length of a valid sequence at s[i], 0 if the byte there starts none ---- */
static size_t u8_seq(const unsigned char *s, size_t n, size_t i)
{
	unsigned char c = s[i];
	if (c < 0x80)
		return 1;
	size_t len;
	uint32_t cp;
	if (c >= 0xc2 && c <= 0xdf) {
		len = 2;
		cp = c & 0x1fu;
	} else if (c >= 0xe0 && c <= 0xef) {
		len = 3;
		cp = c & 0x0fu;
	} else if (c >= 0xf0 && c <= 0xf4) {
		len = 4;
		cp = c & 0x07u;
	} else {
		return 0;
	}
	if (n - i < len)
		return 0;
	for (size_t k = 1; k < len; k++) {
		if ((s[i + k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i + k] & 0x3fu);
	}
	/* overlong, surrogates, beyond U+10FFFF */
	if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return len;
}

static const char replacement[] = "\xef\xbf\xbd"; /* U+FFFD */

/* Bytes s[0..n) take once invalid sequences are replaced. */
static size_t u8_clean_len(const unsigned char *s, size_t n)
{
	size_t out = 0;
	for (size_t i = 0; i < n;) {
		size_t k = u8_seq(s, n, i);
		out += k ? k : 3;
		i += k ? k : 1;
	}
	return out;
}

static void put_clean(struct otlp_enc *e, const unsigned char *s, size_t n, bool json)
{
	static const char hex[] = "0123456789abcdef";
	for (size_t i = 0; i < n && !e->failed;) {
		size_t k = u8_seq(s, n, i);
		if (!k) {
			put(e, replacement, 3);
			i++;
			continue;
		}
		unsigned char c = s[i];
		if (json && k == 1 && (c < 0x20 || c == '"' || c == '\\' || c == 0x7f)) {
			char esc[7] = {'\\', 0, 0, 0, 0, 0, 0};
			size_t m = 2;
			switch (c) {
			case '"': esc[1] = '"'; break;
			case '\\': esc[1] = '\\'; break;
			case '\n': esc[1] = 'n'; break;
			case '\r': esc[1] = 'r'; break;
			case '\t': esc[1] = 't'; break;
			default:
				esc[1] = 'u';
				esc[2] = '0';
				esc[3] = '0';
				esc[4] = hex[c >> 4];
				esc[5] = hex[c & 15];
				m = 6;
			}
			put(e, esc, m);
		} else {
			put(e, s + i, k);
		}
		i += k;
	}
}

/* ---- structure ---- */
static void json_member(struct otlp_enc *e, const char *name)
{
	if (e->lv[e->depth].any)
		putc1(e, ',');
	e->lv[e->depth].any = true;
	if (name) {
		putc1(e, '"');
		puts0(e, name);
		puts0(e, "\":");
	}
}

static bool push(struct otlp_enc *e, bool is_arr, uint32_t arr_field, size_t len_at)
{
	if (e->depth + 1 >= OTLP_ENC_DEPTH) {
		fail(e, -EINVAL);
		return false;
	}
	e->depth++;
	e->lv[e->depth].any = false;
	e->lv[e->depth].is_arr = is_arr;
	e->lv[e->depth].arr_field = arr_field;
	e->lv[e->depth].len_at = len_at;
	return true;
}

void otlp_enc_init(struct otlp_enc *e, enum otlp_fmt fmt, size_t limit)
{
	memset(e, 0, sizeof(*e));
	e->fmt = fmt;
	e->limit = limit;
	if (fmt == OTLP_FMT_JSON)
		putc1(e, '{');
}

void otlp_enc_free(struct otlp_enc *e)
{
	free(e->buf);
	e->buf = NULL;
	e->len = e->cap = 0;
}

int otlp_enc_finish(struct otlp_enc *e, char **out, size_t *len)
{
	if (e->fmt == OTLP_FMT_JSON)
		putc1(e, '}');
	int rc = e->failed ? e->err : e->depth != 0 ? -EINVAL : 0;
	if (rc) {
		otlp_enc_free(e);
		return rc;
	}
	*out = e->buf;
	*len = e->len;
	e->buf = NULL;
	return 0;
}

static void open_len(struct otlp_enc *e, uint32_t field)
{
	put_tag(e, field, WT_LEN);
	size_t at = e->len;
	putc1(e, 0); /* length, back-patched */
	push(e, false, 0, at);
}

static void close_len(struct otlp_enc *e)
{
	if (e->depth <= 0) {
		fail(e, -EINVAL);
		return;
	}
	size_t at = e->lv[e->depth].len_at;
	e->depth--;
	if (e->failed)
		return;
	size_t content = e->len - at - 1;
	uint8_t b[10];
	size_t k = varint(b, content);
	if (k > 1) {
		if (!reserve(e, k - 1))
			return;
		memmove(e->buf + at + k, e->buf + at + 1, content);
		e->len += k - 1;
	}
	memcpy(e->buf + at, b, k);
}

void otlp_msg_begin(struct otlp_enc *e, uint32_t field, const char *name)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		open_len(e, field);
		return;
	}
	json_member(e, name);
	putc1(e, '{');
	push(e, false, 0, 0);
}

void otlp_msg_end(struct otlp_enc *e)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		close_len(e);
		return;
	}
	putc1(e, '}');
	if (e->depth > 0)
		e->depth--;
	else
		fail(e, -EINVAL);
}

void otlp_arr_begin(struct otlp_enc *e, uint32_t field, const char *name)
{
	if (e->fmt == OTLP_FMT_JSON) {
		json_member(e, name);
		putc1(e, '[');
	}
	push(e, true, field, 0);
}

void otlp_elem_begin(struct otlp_enc *e)
{
	if (!e->lv[e->depth].is_arr) {
		fail(e, -EINVAL);
		return;
	}
	if (e->fmt == OTLP_FMT_PROTO) {
		open_len(e, e->lv[e->depth].arr_field);
		return;
	}
	json_member(e, NULL);
	putc1(e, '{');
	push(e, false, 0, 0);
}

void otlp_elem_end(struct otlp_enc *e)
{
	otlp_msg_end(e);
}

void otlp_arr_end(struct otlp_enc *e)
{
	if (e->depth <= 0 || !e->lv[e->depth].is_arr) {
		fail(e, -EINVAL);
		return;
	}
	if (e->fmt == OTLP_FMT_JSON)
		putc1(e, ']');
	e->depth--;
}

/* ---- scalars ---- */
void otlp_strn(struct otlp_enc *e, uint32_t field, const char *name, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)(s ? s : "");
	if (!s)
		n = 0;
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_LEN);
		put_varint(e, u8_clean_len(u, n));
		put_clean(e, u, n, false);
		return;
	}
	json_member(e, name);
	putc1(e, '"');
	put_clean(e, u, n, true);
	putc1(e, '"');
}

void otlp_str(struct otlp_enc *e, uint32_t field, const char *name, const char *s)
{
	otlp_strn(e, field, name, s, s ? strlen(s) : 0);
}

void otlp_hex_bytes(struct otlp_enc *e, uint32_t field, const char *name, const uint8_t *b,
		    size_t n)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_LEN);
		put_varint(e, n);
		put(e, b, n);
		return;
	}
	static const char hex[] = "0123456789abcdef";
	json_member(e, name);
	putc1(e, '"');
	for (size_t i = 0; i < n; i++) {
		char h[2] = {hex[b[i] >> 4], hex[b[i] & 15]};
		put(e, h, 2);
	}
	putc1(e, '"');
}

static void json_quoted_u64(struct otlp_enc *e, uint64_t v)
{
	char t[24];
	int k = snprintf(t, sizeof(t), "\"%llu\"", (unsigned long long)v);
	put(e, t, (size_t)k);
}

void otlp_u64_varint(struct otlp_enc *e, uint32_t field, const char *name, uint64_t v)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_VARINT);
		put_varint(e, v);
		return;
	}
	json_member(e, name);
	json_quoted_u64(e, v);
}

void otlp_i64_varint(struct otlp_enc *e, uint32_t field, const char *name, int64_t v)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_VARINT);
		put_varint(e, (uint64_t)v);
		return;
	}
	char t[24];
	json_member(e, name);
	int k = snprintf(t, sizeof(t), "\"%lld\"", (long long)v);
	put(e, t, (size_t)k);
}

void otlp_u32(struct otlp_enc *e, uint32_t field, const char *name, uint32_t v)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_VARINT);
		put_varint(e, v);
		return;
	}
	char t[16];
	json_member(e, name);
	int k = snprintf(t, sizeof(t), "%u", v);
	put(e, t, (size_t)k);
}

void otlp_fixed64(struct otlp_enc *e, uint32_t field, const char *name, uint64_t v)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_I64);
		put_le64(e, v);
		return;
	}
	json_member(e, name);
	json_quoted_u64(e, v);
}

void otlp_sfixed64(struct otlp_enc *e, uint32_t field, const char *name, int64_t v)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_I64);
		put_le64(e, (uint64_t)v);
		return;
	}
	char t[24];
	json_member(e, name);
	int k = snprintf(t, sizeof(t), "\"%lld\"", (long long)v);
	put(e, t, (size_t)k);
}

static void json_double(struct otlp_enc *e, double v)
{
	char t[32];
	if (!isfinite(v))
		v = 0;
	int k = snprintf(t, sizeof(t), "%.17g", v);
	put(e, t, (size_t)k);
}

static uint64_t double_bits(double v)
{
	uint64_t u;
	memcpy(&u, &v, sizeof(u));
	return u;
}

void otlp_double(struct otlp_enc *e, uint32_t field, const char *name, double v)
{
	if (!isfinite(v))
		v = 0;
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_I64);
		put_le64(e, double_bits(v));
		return;
	}
	json_member(e, name);
	json_double(e, v);
}

void otlp_bool(struct otlp_enc *e, uint32_t field, const char *name, bool v)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_VARINT);
		put_varint(e, v ? 1 : 0);
		return;
	}
	json_member(e, name);
	puts0(e, v ? "true" : "false");
}

void otlp_packed_fixed64(struct otlp_enc *e, uint32_t field, const char *name,
			 const uint64_t *v, size_t n)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_LEN);
		put_varint(e, 8 * (uint64_t)n);
		for (size_t i = 0; i < n; i++)
			put_le64(e, v[i]);
		return;
	}
	json_member(e, name);
	putc1(e, '[');
	for (size_t i = 0; i < n; i++) {
		if (i)
			putc1(e, ',');
		json_quoted_u64(e, v[i]);
	}
	putc1(e, ']');
}

void otlp_packed_double(struct otlp_enc *e, uint32_t field, const char *name, const double *v,
			size_t n)
{
	if (e->fmt == OTLP_FMT_PROTO) {
		put_tag(e, field, WT_LEN);
		put_varint(e, 8 * (uint64_t)n);
		for (size_t i = 0; i < n; i++)
			put_le64(e, double_bits(isfinite(v[i]) ? v[i] : 0));
		return;
	}
	json_member(e, name);
	putc1(e, '[');
	for (size_t i = 0; i < n; i++) {
		if (i)
			putc1(e, ',');
		json_double(e, v[i]);
	}
	putc1(e, ']');
}

/* KeyValue {key = 1, value = 2: AnyValue {string_value = 1, int_value = 3}} */
void otlp_attr_str(struct otlp_enc *e, const char *key, const char *v)
{
	otlp_elem_begin(e);
	otlp_str(e, 1, "key", key);
	otlp_msg_begin(e, 2, "value");
	otlp_str(e, 1, "stringValue", v);
	otlp_msg_end(e);
	otlp_elem_end(e);
}

void otlp_attr_int(struct otlp_enc *e, const char *key, int64_t v)
{
	otlp_elem_begin(e);
	otlp_str(e, 1, "key", key);
	otlp_msg_begin(e, 2, "value");
	otlp_i64_varint(e, 3, "intValue", v);
	otlp_msg_end(e);
	otlp_elem_end(e);
}

/* Agreement protocol: frame parsing and encoding (agree_wire.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree_wire.h"

#define AGREE_FP_BYTES 36 /* lib, tuner, chunk (u64), wait_ms, fanout, flags (u32) */
#define AGREE_NONCE 16

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

static long bad(char *err, size_t errlen, long rc, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

uint64_t agree_fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *s = p;
	for (size_t i = 0; i < n; i++) {
		h ^= s[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

/* Fixed payload sizes before any variable part. */
static long need(uint32_t type)
{
	switch (type) {
	case AGREE_MSG_HELLO: return 12 + AGREE_FP_BYTES; /* n_ranks, flags, n_streams, fp */
	case AGREE_MSG_WELCOME: return 8;    /* fallback seq */
	case AGREE_MSG_REFUSE: return 4;     /* reason */
	case AGREE_MSG_CONTRIB:
	case AGREE_MSG_DATA: return 20;      /* stream, number, value_size, n_entries */
	case AGREE_MSG_ACK:
	case AGREE_MSG_COMMIT: return 12;    /* stream, number */
	case AGREE_MSG_FALLBACK: return 8;   /* seq */
	case AGREE_MSG_BYE: return 0;
	case AGREE_MSG_REGISTER: return 4;   /* port */
	case AGREE_MSG_LOOKUP: return 0;
	case AGREE_MSG_LEADER: return 8;     /* addr, port */
	case AGREE_MSG_PARTIAL: return 24;   /* stream, number, done, value_size, n_entries */
	case AGREE_MSG_LOST: return 4;       /* rank */
	case AGREE_MSG_CHALLENGE: return AGREE_NONCE;
	case AGREE_MSG_AUTH: return AGREE_NONCE + 8;
	case AGREE_MSG_AUTH_OK: return 8;
	case AGREE_MSG_READY: return 0;
	case AGREE_MSG_RECOVER: return 16;   /* flags, seq, n_streams */
	default: return -1;
	}
}

long agree_wire_parse(const uint8_t *buf, size_t len, struct agree_msg *m, char *err,
		      size_t errlen)
{
	if (len < AGREE_HDR_SIZE)
		return 0;
	memset(m, 0, sizeof(*m));
	m->h.magic = rd32(buf);
	m->h.version = (uint16_t)(buf[4] | buf[5] << 8);
	m->h.type = (uint16_t)(buf[6] | buf[7] << 8);
	m->h.length = rd32(buf + 8);
	m->h.rank = rd32(buf + 12);
	m->h.comm_id = rd64(buf + 16);
	m->h.reserved = rd64(buf + 24);
	if (m->h.magic != AGREE_MAGIC)
		return bad(err, errlen, -EPROTO, "bad magic 0x%08x", m->h.magic);
	if (m->h.version != AGREE_WIRE_VERSION)
		return bad(err, errlen, -EPROTO, "protocol version %u, expected %u", m->h.version,
			   AGREE_WIRE_VERSION);
	long fixed = need(m->h.type);
	if (fixed < 0)
		return bad(err, errlen, -EPROTO, "unknown message type %u", m->h.type);
	if (m->h.length > AGREE_MAX_PAYLOAD)
		return bad(err, errlen, -EMSGSIZE, "payload length %u over the %u-byte limit",
			   m->h.length, AGREE_MAX_PAYLOAD);
	if ((uint64_t)m->h.length < (uint64_t)fixed)
		return bad(err, errlen, -EBADMSG, "type %u: payload %u bytes, needs >= %ld",
			   m->h.type, m->h.length, fixed);
	if (len - AGREE_HDR_SIZE < m->h.length)
		return 0;
	const uint8_t *p = buf + AGREE_HDR_SIZE;
	uint32_t n = m->h.length;
	switch (m->h.type) {
	case AGREE_MSG_HELLO: {
		m->n_ranks = rd32(p);
		m->flags = rd32(p + 4);
		m->n_streams = rd32(p + 8);
		if (m->n_streams > AGREE_MAX_STREAMS)
			return bad(err, errlen, -EBADMSG, "HELLO: %u streams (max %d)", m->n_streams,
				   AGREE_MAX_STREAMS);
		if (n != 12 + m->n_streams * 20u + AGREE_FP_BYTES)
			return bad(err, errlen, -EBADMSG, "HELLO: %u bytes for %u streams", n,
				   m->n_streams);
		for (uint32_t i = 0; i < m->n_streams; i++) {
			const uint8_t *s = p + 12 + i * 20;
			m->streams[i].name_hash = rd64(s);
			m->streams[i].value_size = rd32(s + 8);
			m->streams[i].max_entries = rd32(s + 12);
			m->streams[i].map_flags = rd32(s + 16);
		}
		const uint8_t *f = p + 12 + m->n_streams * 20u;
		m->fp.lib = rd64(f);
		m->fp.tuner = rd64(f + 8);
		m->fp.chunk = rd64(f + 16);
		m->fp.wait_ms = rd32(f + 24);
		m->fp.fanout = rd32(f + 28);
		m->fp.flags = rd32(f + 32);
		break;
	}
	case AGREE_MSG_WELCOME:
		/* seq, then optionally u32 flags (AGREE_WELCOME_READY), then optionally why, its
		 * rank and detail (the group's reason to fall back, when seq is one) */
		if (n != 8 && n != 12 && n != 24)
			return bad(err, errlen, -EBADMSG, "WELCOME: %u bytes", n);
		m->seq = rd64(p);
		m->flags = n >= 12 ? rd32(p + 8) : 0;
		if (n == 24) {
			m->why = rd32(p + 12);
			m->why_rank = rd32(p + 16);
			m->why_detail = rd32(p + 20);
			if (m->why >= AGREE_WHY_MAX)
				return bad(err, errlen, -EBADMSG, "WELCOME: reason %u", m->why);
		}
		break;
	case AGREE_MSG_FALLBACK:
		/* seq, then optionally u32 flags (AGREE_FALLBACK_*), then optionally why, its rank
		 * and detail (3 x u32) */
		if (n != 8 && n != 12 && n != 24)
			return bad(err, errlen, -EBADMSG, "FALLBACK: %u bytes", n);
		m->seq = rd64(p);
		m->reason = n >= 12 ? rd32(p + 8) : 0;
		if (n == 24) {
			m->why = rd32(p + 12);
			m->why_rank = rd32(p + 16);
			m->why_detail = rd32(p + 20);
			if (m->why >= AGREE_WHY_MAX)
				return bad(err, errlen, -EBADMSG, "FALLBACK: reason %u", m->why);
		}
		break;
	case AGREE_MSG_REFUSE:
		/* reason, then optionally u32 detail and u64 value */
		if (n != 4 && n != 16)
			return bad(err, errlen, -EBADMSG, "REFUSE: %u bytes", n);
		m->reason = rd32(p);
		if (n == 16) {
			m->detail = rd32(p + 4);
			m->value = rd64(p + 8);
		}
		break;
	case AGREE_MSG_CHALLENGE:
	case AGREE_MSG_AUTH:
		if (n != need(m->h.type))
			return bad(err, errlen, -EBADMSG, "type %u: %u bytes", m->h.type, n);
		memcpy(m->nonce, p, AGREE_NONCE);
		m->mac = m->h.type == AGREE_MSG_AUTH ? rd64(p + AGREE_NONCE) : 0;
		break;
	case AGREE_MSG_AUTH_OK:
		if (n != 8)
			return bad(err, errlen, -EBADMSG, "AUTH_OK: %u bytes", n);
		m->mac = rd64(p);
		break;
	case AGREE_MSG_CONTRIB:
	case AGREE_MSG_DATA:
	case AGREE_MSG_PARTIAL: {
		uint32_t off = 0;
		m->stream = rd32(p);
		m->number = rd64(p + 4);
		if (m->h.type == AGREE_MSG_PARTIAL) {
			m->done = rd32(p + 12);
			off = 4;
		}
		m->value_size = rd32(p + 12 + off);
		m->n_entries = rd32(p + 16 + off);
		if (m->value_size == 0 || m->value_size % 8 || m->value_size > (1u << 20))
			return bad(err, errlen, -EBADMSG, "type %u: value size %u", m->h.type,
				   m->value_size);
		if (m->h.type == AGREE_MSG_PARTIAL && m->value_size < 16)
			return bad(err, errlen, -EBADMSG, "PARTIAL: entry size %u", m->value_size);
		uint64_t body = (uint64_t)m->n_entries * (4u + m->value_size);
		if (body != n - 20u - off)
			return bad(err, errlen, -EBADMSG,
				   "type %u: %u entries of %u bytes need %llu bytes, payload has %u",
				   m->h.type, m->n_entries, m->value_size, (unsigned long long)body,
				   n - 20u - off);
		m->entries = p + 20 + off;
		break;
	}
	case AGREE_MSG_ACK:
	case AGREE_MSG_COMMIT:
		if (n != 12)
			return bad(err, errlen, -EBADMSG, "type %u: %u bytes, expected 12", m->h.type, n);
		m->stream = rd32(p);
		m->number = rd64(p + 4);
		break;
	case AGREE_MSG_BYE:
	case AGREE_MSG_LOOKUP:
	case AGREE_MSG_READY:
		if (n != 0)
			return bad(err, errlen, -EBADMSG, "type %u: unexpected payload", m->h.type);
		break;
	case AGREE_MSG_RECOVER:
		m->flags = rd32(p);
		m->seq = rd64(p + 4);
		m->n_streams = rd32(p + 12);
		if (m->n_streams > AGREE_MAX_STREAMS || n != 16 + m->n_streams * 8u)
			return bad(err, errlen, -EBADMSG, "RECOVER: %u bytes for %u streams", n,
				   m->n_streams);
		for (uint32_t i = 0; i < m->n_streams; i++)
			m->committed[i] = rd64(p + 16 + i * 8);
		break;
	case AGREE_MSG_LOST:
		/* rank, then optionally u32 flags (AGREE_FALLBACK_ORDERLY: it said BYE) */
		if (n != 4 && n != 8)
			return bad(err, errlen, -EBADMSG, "LOST: %u bytes", n);
		m->lost = rd32(p);
		m->reason = n == 8 ? rd32(p + 4) : 0;
		break;
	case AGREE_MSG_REGISTER:
		if (n != 4)
			return bad(err, errlen, -EBADMSG, "REGISTER: %u bytes", n);
		m->port = rd32(p);
		if (m->port == 0 || m->port > 65535)
			return bad(err, errlen, -EBADMSG, "REGISTER: port %u", m->port);
		break;
	case AGREE_MSG_LEADER:
		if (n != 8)
			return bad(err, errlen, -EBADMSG, "LEADER: %u bytes", n);
		memcpy(&m->addr, p, 4); /* network order, as stored */
		m->port = rd32(p + 4);
		if (m->port > 65535)
			return bad(err, errlen, -EBADMSG, "LEADER: port %u", m->port);
		break;
	}
	if ((m->h.type == AGREE_MSG_CONTRIB || m->h.type == AGREE_MSG_DATA ||
	     m->h.type == AGREE_MSG_ACK || m->h.type == AGREE_MSG_COMMIT ||
	     m->h.type == AGREE_MSG_PARTIAL) &&
	    m->stream >= AGREE_MAX_STREAMS)
		return bad(err, errlen, -EBADMSG, "stream %u out of range", m->stream);
	return AGREE_HDR_SIZE + (long)n;
}

int agree_wire_check_entries(const struct agree_msg *m, uint32_t max_entries,
			     uint32_t value_size)
{
	if (m->value_size != value_size)
		return -EBADMSG;
	for (uint32_t i = 0; i < m->n_entries; i++)
		if (rd32(m->entries + (size_t)i * (4u + value_size)) >= max_entries)
			return -EBADMSG;
	return 0;
}

void agree_wire_apply(uint8_t *view, uint32_t stride, const struct agree_msg *m)
{
	for (uint32_t i = 0; i < m->n_entries; i++) {
		const uint8_t *e = m->entries + (size_t)i * (4u + m->value_size);
		memcpy(view + (size_t)rd32(e) * stride, e + 4, m->value_size);
	}
}

void agree_buf_free(struct agree_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void agree_buf_put(struct agree_buf *b, const void *src, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		uint8_t *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

void agree_buf_u32(struct agree_buf *b, uint32_t v)
{
	uint8_t x[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	agree_buf_put(b, x, 4);
}

void agree_buf_u64(struct agree_buf *b, uint64_t v)
{
	agree_buf_u32(b, (uint32_t)v);
	agree_buf_u32(b, (uint32_t)(v >> 32));
}

size_t agree_wire_begin(struct agree_buf *b, enum agree_msg_type type, uint32_t rank,
			uint64_t comm_id)
{
	size_t off = b->len;
	agree_buf_u32(b, AGREE_MAGIC);
	uint8_t vt[4] = {AGREE_WIRE_VERSION, 0, (uint8_t)type, (uint8_t)(type >> 8)};
	agree_buf_put(b, vt, 4);
	agree_buf_u32(b, 0);
	agree_buf_u32(b, rank);
	agree_buf_u64(b, comm_id);
	agree_buf_u64(b, 0);
	return off;
}

void agree_wire_end(struct agree_buf *b, size_t off)
{
	if (b->oom || b->len < off + AGREE_HDR_SIZE)
		return;
	uint32_t n = (uint32_t)(b->len - off - AGREE_HDR_SIZE);
	uint8_t *p = b->p + off + 8;
	p[0] = (uint8_t)n;
	p[1] = (uint8_t)(n >> 8);
	p[2] = (uint8_t)(n >> 16);
	p[3] = (uint8_t)(n >> 24);
}

uint32_t agree_wire_put_delta(struct agree_buf *b, const uint8_t *cur, const uint8_t *prev,
			      uint32_t max_entries, uint32_t stride, uint32_t value_size)
{
	static const uint8_t zero[64];
	uint32_t n = 0;
	for (uint32_t i = 0; i < max_entries; i++) {
		const uint8_t *c = cur + (size_t)i * stride;
		bool same;
		if (prev)
			same = memcmp(c, prev + (size_t)i * stride, value_size) == 0;
		else {
			same = true;
			for (uint32_t o = 0; o < value_size && same; o += sizeof(zero)) {
				uint32_t k = value_size - o < sizeof(zero) ? value_size - o : sizeof(zero);
				same = memcmp(c + o, zero, k) == 0;
			}
		}
		if (same)
			continue;
		agree_buf_u32(b, i);
		agree_buf_put(b, c, value_size);
		n++;
	}
	return n;
}

void agree_wire_put_hello(struct agree_buf *b, uint32_t n_ranks, uint32_t flags,
			  uint32_t n_streams, const struct agree_stream_sig *streams,
			  const struct agree_fingerprint *fp)
{
	agree_buf_u32(b, n_ranks);
	agree_buf_u32(b, flags);
	agree_buf_u32(b, n_streams);
	for (uint32_t i = 0; i < n_streams; i++) {
		agree_buf_u64(b, streams[i].name_hash);
		agree_buf_u32(b, streams[i].value_size);
		agree_buf_u32(b, streams[i].max_entries);
		agree_buf_u32(b, streams[i].map_flags);
	}
	agree_buf_u64(b, fp->lib);
	agree_buf_u64(b, fp->tuner);
	agree_buf_u64(b, fp->chunk);
	agree_buf_u32(b, fp->wait_ms);
	agree_buf_u32(b, fp->fanout);
	agree_buf_u32(b, fp->flags);
}

void agree_wire_put_fallback(struct agree_buf *b, uint64_t seq, uint32_t flags, uint32_t why,
			     uint32_t why_rank, uint32_t why_detail)
{
	agree_buf_u64(b, seq);
	agree_buf_u32(b, flags);
	agree_buf_u32(b, why);
	agree_buf_u32(b, why_rank);
	agree_buf_u32(b, why_detail);
}

void agree_wire_put_recover(struct agree_buf *b, uint32_t flags, uint64_t seq,
			    uint32_t n_streams, const uint64_t *committed)
{
	agree_buf_u32(b, flags);
	agree_buf_u64(b, seq);
	agree_buf_u32(b, n_streams);
	for (uint32_t i = 0; i < n_streams; i++)
		agree_buf_u64(b, committed[i]);
}

const char *agree_fp_field_name(uint32_t field)
{
	static const char *const names[AGREE_FP_FIELD_MAX] = {
		[AGREE_FP_NONE] = "nothing",
		[AGREE_FP_NRANKS] = "communicator size",
		[AGREE_FP_STREAMS] = "agreed maps (names, shapes, reduce operations, epoch lengths)",
		[AGREE_FP_LIB] = "ncclbpf library version",
		[AGREE_FP_TUNER] = "tuner programs (NCCLBPF_POLICY content)",
		[AGREE_FP_CHUNK] = "tuner/chunk programs (NCCLBPF_POLICY content)",
		[AGREE_FP_WAIT] = "NCCLBPF_AGREE_WAIT_MS",
		[AGREE_FP_FANOUT] = "NCCLBPF_AGREE_FANOUT",
		[AGREE_FP_FLAGS] = "NCCLBPF_TUNER_SYM",
	};
	return field < AGREE_FP_FIELD_MAX ? names[field] : "unknown field";
}

/* libFuzzer target for the agreement protocol's message parser: the bytes a peer (or
 * anything that connects to the port) sends. The input is consumed like a connection's
 * stream: frames are parsed one after another until the parser needs more bytes or
 * rejects one. Every accepted frame must be self-consistent (sizes within the payload),
 * its entries are bounds-checked against a stream and applied to a view, and a HELLO is
 * re-encoded and must parse back to the same fields (the configuration fingerprint
 * included); a relay's PARTIAL (entries of value + count) and LOST are checked the same
 * way, the handshake frames (CHALLENGE, AUTH, AUTH_OK: what a stranger sends first) for
 * their exact sizes. Never crash, leak or read out of
 * bounds (built with -fsanitize=fuzzer,address,undefined). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agree/agree_wire.h"

#define VIEW_ENTRIES 64
#define VIEW_VALUE 16

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t view[VIEW_ENTRIES * VIEW_VALUE];
	static uint8_t part[VIEW_ENTRIES * (VIEW_VALUE + 8)]; /* a relay's PARTIAL: + count */
	size_t off = 0;
	while (off < size) {
		struct agree_msg m;
		char err[160];
		long used = agree_wire_parse(data + off, size - off, &m, err, sizeof(err));
		if (used <= 0)
			break;
		if ((size_t)used > size - off || (size_t)used != AGREE_HDR_SIZE + m.h.length)
			abort();
		if (m.h.type == AGREE_MSG_CONTRIB || m.h.type == AGREE_MSG_DATA) {
			const uint8_t *end = data + off + used;
			if (m.entries + (size_t)m.n_entries * (4u + m.value_size) != end)
				abort();
			if (agree_wire_check_entries(&m, VIEW_ENTRIES, VIEW_VALUE) == 0)
				agree_wire_apply(view, VIEW_VALUE, &m);
		}
		if (m.h.type == AGREE_MSG_PARTIAL) {
			const uint8_t *end = data + off + used;
			if (m.entries + (size_t)m.n_entries * (4u + m.value_size) != end ||
			    m.value_size < 16)
				abort();
			if (agree_wire_check_entries(&m, VIEW_ENTRIES, VIEW_VALUE + 8) == 0)
				agree_wire_apply(part, VIEW_VALUE + 8, &m);
		}
		/* LOST: rank, optionally u32 flags (only then a non-zero reason) */
		if (m.h.type == AGREE_MSG_LOST && ((m.h.length != 4 && m.h.length != 8) ||
						   (m.h.length == 4 && m.reason != 0)))
			abort();
		if (m.h.type == AGREE_MSG_HELLO) {
			struct agree_buf b = {0};
			size_t f = agree_wire_begin(&b, AGREE_MSG_HELLO, m.h.rank, m.h.comm_id);
			agree_wire_put_hello(&b, m.n_ranks, m.flags, m.n_streams, m.streams, &m.fp);
			agree_wire_end(&b, f);
			struct agree_msg m2;
			if (!b.oom) {
				if (agree_wire_parse(b.p, b.len, &m2, err, sizeof(err)) != (long)b.len ||
				    m2.n_streams != m.n_streams || m2.n_ranks != m.n_ranks ||
				    m2.flags != m.flags || m2.fp.tuner != m.fp.tuner ||
				    m2.fp.flags != m.fp.flags ||
				    memcmp(m2.streams, m.streams, m.n_streams * sizeof(m.streams[0])))
					abort();
			}
			agree_buf_free(&b);
		}
		/* RECOVER re-encodes to the same bytes */
		if (m.h.type == AGREE_MSG_RECOVER) {
			struct agree_buf b = {0};
			size_t f = agree_wire_begin(&b, AGREE_MSG_RECOVER, m.h.rank, m.h.comm_id);
			agree_wire_put_recover(&b, m.flags, m.seq, m.n_streams, m.committed);
			agree_wire_end(&b, f);
			if (!b.oom && (b.len != (size_t)used ||
				       memcmp(b.p + AGREE_HDR_SIZE, data + off + AGREE_HDR_SIZE,
					      m.h.length)))
				abort();
			agree_buf_free(&b);
		}
		/* the optional reason of FALLBACK / WELCOME is always a known one */
		if ((m.h.type == AGREE_MSG_FALLBACK || m.h.type == AGREE_MSG_WELCOME) &&
		    m.why >= AGREE_WHY_MAX)
			abort();
		/* the handshake frames have exactly their size */
		if ((m.h.type == AGREE_MSG_CHALLENGE && m.h.length != 16) ||
		    (m.h.type == AGREE_MSG_AUTH && m.h.length != 24) ||
		    (m.h.type == AGREE_MSG_AUTH_OK && m.h.length != 8))
			abort();
		off += (size_t)used;
	}
	return 0;
}

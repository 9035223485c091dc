/* One encoder, two wire formats of OTLP (issue 27): the OTLP/JSON encoding (the proto3 JSON
 * mapping with OTLP's exceptions: trace and span ids as hex strings, enums as integers,
 * 64-bit integers as decimal strings) and the protobuf binary encoding, written from the
 * same calls, so that the model code (otlp_model.c) describes each message once.
 *
 * A message field is (protobuf field number, JSON name). Nested messages are opened and
 * closed; repeated message fields are opened as an array whose elements are opened one by
 * one. Protobuf lengths are back-patched (a nested message's content is moved when its
 * length needs more than the one byte reserved). Strings are written as valid UTF-8 (bytes
 * that are not are replaced by U+FFFD: a collector rejects a payload with invalid UTF-8).
 * Output grows a heap buffer up to `limit` bytes; past it, or out of memory, the encoder
 * stops writing and reports failure at the end. Pure (no I/O): fuzzed. */
#ifndef NCCLBPF_PLUGIN_OTLP_ENC_H
#define NCCLBPF_PLUGIN_OTLP_ENC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum otlp_fmt { OTLP_FMT_JSON = 0, OTLP_FMT_PROTO = 1 };

#define OTLP_ENC_DEPTH 16

struct otlp_enc {
	enum otlp_fmt fmt;
	char *buf;
	size_t len, cap, limit;
	bool failed; /* over the limit, out of memory, or nesting too deep */
	int err;     /* the first failure: -ENOSPC, -ENOMEM, -EINVAL */
	int depth;
	/* per open level: JSON: whether a member was written (comma); protobuf: where the
	 * reserved length byte is, and the field number of an open array's elements */
	struct {
		size_t len_at;
		uint32_t arr_field;
		bool any;
		bool is_arr;
	} lv[OTLP_ENC_DEPTH];
};

/* Starts a document (JSON: "{"). limit: the most bytes it may take. */
void otlp_enc_init(struct otlp_enc *e, enum otlp_fmt fmt, size_t limit);
/* Ends it (JSON: "}"). Returns 0 and hands over the buffer (*out, *len; free() it), or
 * -ENOSPC / -ENOMEM / -EINVAL (unbalanced) with nothing to free. */
int otlp_enc_finish(struct otlp_enc *e, char **out, size_t *len);
void otlp_enc_free(struct otlp_enc *e);

void otlp_msg_begin(struct otlp_enc *e, uint32_t field, const char *name);
void otlp_msg_end(struct otlp_enc *e);
/* A repeated message field: arr_begin, then elem_begin/elem_end per element, arr_end. */
void otlp_arr_begin(struct otlp_enc *e, uint32_t field, const char *name);
void otlp_elem_begin(struct otlp_enc *e);
void otlp_elem_end(struct otlp_enc *e);
void otlp_arr_end(struct otlp_enc *e);

void otlp_str(struct otlp_enc *e, uint32_t field, const char *name, const char *s);
void otlp_strn(struct otlp_enc *e, uint32_t field, const char *name, const char *s, size_t n);
/* bytes: JSON hex (trace/span ids), protobuf length-delimited */
void otlp_hex_bytes(struct otlp_enc *e, uint32_t field, const char *name, const uint8_t *b,
		    size_t n);
void otlp_u64_varint(struct otlp_enc *e, uint32_t field, const char *name, uint64_t v);
void otlp_i64_varint(struct otlp_enc *e, uint32_t field, const char *name, int64_t v);
void otlp_u32(struct otlp_enc *e, uint32_t field, const char *name, uint32_t v); /* enums too */
void otlp_fixed64(struct otlp_enc *e, uint32_t field, const char *name, uint64_t v);
void otlp_sfixed64(struct otlp_enc *e, uint32_t field, const char *name, int64_t v);
/* Non-finite values are written as 0 (JSON has no NaN). */
void otlp_double(struct otlp_enc *e, uint32_t field, const char *name, double v);
void otlp_bool(struct otlp_enc *e, uint32_t field, const char *name, bool v);
/* packed repeated fixed64 / double */
void otlp_packed_fixed64(struct otlp_enc *e, uint32_t field, const char *name,
			 const uint64_t *v, size_t n);
void otlp_packed_double(struct otlp_enc *e, uint32_t field, const char *name, const double *v,
			size_t n);

/* Common OTLP shapes: a KeyValue element of an open "attributes" array. */
void otlp_attr_str(struct otlp_enc *e, const char *key, const char *v);
void otlp_attr_int(struct otlp_enc *e, const char *key, int64_t v);

#endif

/* The control socket's wire format (versioned, length-limited), shared by the service
 * thread (control.c) and the client (`ncclbpf ctl`, control_client.c). Pure functions: no
 * I/O, no global state, so the parser can be fuzzed on its own (tests/control).
 *
 * Every message, request or reply, is a 16-byte header followed by `len` payload bytes:
 *   u32 magic "NBPC" (0x4350424e little-endian), u16 version (1), u8 op, u8 flags,
 *   u32 len, i32 status (requests: 0; replies: 0 or a negative errno).
 * A request payload is its arguments, each terminated by a NUL byte (len 0 = none); an
 * argument is 1..4096 printable bytes. A reply payload is text (or JSON with
 * NBC_FLAG_JSON), no NUL. Limits: 64 KiB per request, 16 MiB per reply.
 * One request per connection; the server answers every request it can read, malformed
 * ones with status -EPROTO / -EINVAL and a message, and changes nothing for them. */
#ifndef NCCLBPF_RUNTIME_CONTROL_PROTO_H
#define NCCLBPF_RUNTIME_CONTROL_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define NBC_MAGIC 0x4350424eu /* "NBPC" */
#define NBC_VERSION 1
#define NBC_HEADER_SIZE 16
#define NBC_MAX_REQUEST (64u * 1024u)
#define NBC_MAX_REPLY (16u * 1024u * 1024u)
#define NBC_MAX_ARGS 8
#define NBC_MAX_ARG_LEN 4096

#define NBC_FLAG_JSON 0x1
#define NBC_FLAG_FORCE 0x2 /* reload/detach: switch tuner hooks locally in a multi-rank job */
#define NBC_FLAGS_KNOWN (NBC_FLAG_JSON | NBC_FLAG_FORCE)

enum nbc_op {
	NBC_OP_HELLO = 1, /* one-line summary (ctl list) */
	NBC_OP_STATUS,
	NBC_OP_MAPS,
	NBC_OP_DUMP,      /* MAP */
	NBC_OP_UPDATE,    /* MAP KEY VALUE */
	NBC_OP_RELOAD,    /* SPEC [HOOK] */
	NBC_OP_DETACH,    /* [HOOK] */
	NBC_OP_COUNT
};

struct nbc_header {
	uint32_t magic;
	uint16_t version;
	uint8_t op;
	uint8_t flags;
	uint32_t len;
	int32_t status;
};

struct nbc_request {
	uint8_t op;
	uint8_t flags;
	unsigned argc;
	const char *argv[NBC_MAX_ARGS]; /* point into the payload buffer */
};

const char *nbc_op_name(unsigned op);
void nbc_header_encode(const struct nbc_header *h, uint8_t out[NBC_HEADER_SIZE]);
void nbc_header_decode(const uint8_t in[NBC_HEADER_SIZE], struct nbc_header *h);
/* Checks a request header: magic, version, op, flags, length limit. 0, -EPROTO (not our
 * protocol / other version) or -EINVAL, with err. */
int nbc_check_request_header(const struct nbc_header *h, char *err, size_t errlen);
/* Splits and checks a request payload (header already checked). */
int nbc_parse_request(const struct nbc_header *h, const uint8_t *payload, size_t len,
		      struct nbc_request *req, char *err, size_t errlen);
/* Encodes a request into buf (header + payload); returns its size, or -E2BIG / -EINVAL. */
long nbc_encode_request(uint8_t op, uint8_t flags, unsigned argc, const char *const *argv,
			uint8_t *buf, size_t cap);
/* Parses a key or value for a map of `size` bytes: a decimal or 0x-hex integer (stored
 * little-endian; it must fit, negative values in two's complement), or "hex:" followed by
 * exactly 2*size hex digits (raw bytes in order). */
int nbc_parse_value(const char *s, uint8_t *out, size_t size, char *err, size_t errlen);

#endif

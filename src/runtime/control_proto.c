/* Control socket wire format (control_proto.h). The input here is hostile (bytes from a
 * socket): every length is checked before it is used; fuzzed by tests/control. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "runtime/control_proto.h"

static const struct {
	const char *name;
	unsigned min_args, max_args;
} ops[NBC_OP_COUNT] = {
	[NBC_OP_HELLO] = {"hello", 0, 0},
	[NBC_OP_STATUS] = {"status", 0, 0},
	[NBC_OP_MAPS] = {"maps", 0, 0},
	[NBC_OP_DUMP] = {"dump", 1, 1},
	[NBC_OP_UPDATE] = {"update", 3, 3},
	[NBC_OP_RELOAD] = {"reload", 1, 2},
	[NBC_OP_DETACH] = {"detach", 0, 1},
};

const char *nbc_op_name(unsigned op)
{
	return op > 0 && op < NBC_OP_COUNT ? ops[op].name : "unknown";
}

static void put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void nbc_header_encode(const struct nbc_header *h, uint8_t out[NBC_HEADER_SIZE])
{
	put32(out, h->magic);
	out[4] = (uint8_t)h->version;
	out[5] = (uint8_t)(h->version >> 8);
	out[6] = h->op;
	out[7] = h->flags;
	put32(out + 8, h->len);
	put32(out + 12, (uint32_t)h->status);
}

void nbc_header_decode(const uint8_t in[NBC_HEADER_SIZE], struct nbc_header *h)
{
	h->magic = get32(in);
	h->version = (uint16_t)(in[4] | in[5] << 8);
	h->op = in[6];
	h->flags = in[7];
	h->len = get32(in + 8);
	h->status = (int32_t)get32(in + 12);
}

int nbc_check_request_header(const struct nbc_header *h, char *err, size_t errlen)
{
	if (h->magic != NBC_MAGIC) {
		snprintf(err, errlen, "not an ncclbpf control request (bad magic 0x%08x)", h->magic);
		return -EPROTO;
	}
	if (h->version != NBC_VERSION) {
		snprintf(err, errlen, "protocol version %u not supported (this process speaks %u)",
			 h->version, NBC_VERSION);
		return -EPROTO;
	}
	if (h->op == 0 || h->op >= NBC_OP_COUNT) {
		snprintf(err, errlen, "unknown request %u", h->op);
		return -EINVAL;
	}
	if (h->flags & ~NBC_FLAGS_KNOWN) {
		snprintf(err, errlen, "unknown flags 0x%x", h->flags & ~NBC_FLAGS_KNOWN);
		return -EINVAL;
	}
	if (h->len > NBC_MAX_REQUEST) {
		snprintf(err, errlen, "request of %u bytes exceeds the %u-byte limit", h->len,
			 NBC_MAX_REQUEST);
		return -EINVAL;
	}
	if (h->status != 0) {
		snprintf(err, errlen, "a request carries status 0, not %d", h->status);
		return -EINVAL;
	}
	return 0;
}

int nbc_parse_request(const struct nbc_header *h, const uint8_t *payload, size_t len,
		      struct nbc_request *req, char *err, size_t errlen)
{
	memset(req, 0, sizeof(*req));
	int rc = nbc_check_request_header(h, err, errlen);
	if (rc)
		return rc;
	if (len != h->len || (len && !payload)) {
		snprintf(err, errlen, "payload of %zu bytes, header says %u", len, h->len);
		return -EINVAL;
	}
	req->op = h->op;
	req->flags = h->flags;
	size_t pos = 0;
	while (pos < len) {
		const uint8_t *nul = memchr(payload + pos, 0, len - pos);
		if (!nul) {
			snprintf(err, errlen, "argument %u is not NUL-terminated", req->argc + 1);
			return -EINVAL;
		}
		size_t alen = (size_t)(nul - (payload + pos));
		if (alen == 0 || alen > NBC_MAX_ARG_LEN) {
			snprintf(err, errlen, "argument %u has %zu bytes (1..%u)", req->argc + 1, alen,
				 NBC_MAX_ARG_LEN);
			return -EINVAL;
		}
		for (size_t i = 0; i < alen; i++) {
			if (payload[pos + i] < 0x20 || payload[pos + i] == 0x7f) {
				snprintf(err, errlen, "argument %u: control byte 0x%02x at %zu",
					 req->argc + 1, payload[pos + i], i);
				return -EINVAL;
			}
		}
		if (req->argc == NBC_MAX_ARGS) {
			snprintf(err, errlen, "more than %u arguments", NBC_MAX_ARGS);
			return -EINVAL;
		}
		req->argv[req->argc++] = (const char *)payload + pos;
		pos += alen + 1;
	}
	if (req->argc < ops[req->op].min_args || req->argc > ops[req->op].max_args) {
		snprintf(err, errlen, "%s takes %u..%u arguments, got %u", ops[req->op].name,
			 ops[req->op].min_args, ops[req->op].max_args, req->argc);
		return -EINVAL;
	}
	return 0;
}

long nbc_encode_request(uint8_t op, uint8_t flags, unsigned argc, const char *const *argv,
			uint8_t *buf, size_t cap)
{
	size_t len = 0;
	if (argc > NBC_MAX_ARGS || op == 0 || op >= NBC_OP_COUNT)
		return -EINVAL;
	for (unsigned i = 0; i < argc; i++) {
		size_t a = strlen(argv[i]);
		if (a == 0 || a > NBC_MAX_ARG_LEN)
			return -EINVAL;
		len += a + 1;
	}
	if (len > NBC_MAX_REQUEST || NBC_HEADER_SIZE + len > cap)
		return -E2BIG;
	struct nbc_header h = {NBC_MAGIC, NBC_VERSION, op, flags, (uint32_t)len, 0};
	nbc_header_encode(&h, buf);
	size_t pos = NBC_HEADER_SIZE;
	for (unsigned i = 0; i < argc; i++) {
		size_t a = strlen(argv[i]) + 1;
		memcpy(buf + pos, argv[i], a);
		pos += a;
	}
	return (long)pos;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int nbc_parse_value(const char *s, uint8_t *out, size_t size, char *err, size_t errlen)
{
	if (!s || !*s || size == 0) {
		snprintf(err, errlen, "empty value");
		return -EINVAL;
	}
	memset(out, 0, size);
	if (!strncmp(s, "hex:", 4)) {
		const char *h = s + 4;
		size_t n = strlen(h);
		if (n != 2 * size) {
			snprintf(err, errlen, "'%.40s': %zu hex digits, the map needs %zu (%zu bytes)", s,
				 n, 2 * size, size);
			return -EINVAL;
		}
		for (size_t i = 0; i < size; i++) {
			int hi = hexval(h[2 * i]), lo = hexval(h[2 * i + 1]);
			if (hi < 0 || lo < 0) {
				snprintf(err, errlen, "'%.40s': not a hex digit at %zu", s, 2 * i + 4);
				return -EINVAL;
			}
			out[i] = (uint8_t)(hi << 4 | lo);
		}
		return 0;
	}
	bool neg = s[0] == '-';
	const char *p = s + (neg || s[0] == '+');
	unsigned base = 10;
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (!*p) {
		snprintf(err, errlen, "'%.40s' is not a number (decimal, 0x-hex or hex:BYTES)", s);
		return -EINVAL;
	}
	uint64_t v = 0;
	for (; *p; p++) {
		int d = hexval(*p);
		if (d < 0 || (unsigned)d >= base) {
			snprintf(err, errlen, "'%.40s' is not a number (decimal, 0x-hex or hex:BYTES)",
				 s);
			return -EINVAL;
		}
		if (v > (UINT64_MAX - (uint64_t)d) / base) {
			snprintf(err, errlen, "'%.40s' does not fit in 64 bits", s);
			return -ERANGE;
		}
		v = v * base + (uint64_t)d;
	}
	size_t bits = size >= 8 ? 64 : size * 8;
	if (neg) {
		/* two's complement: -2^(bits-1) .. -1 */
		uint64_t lim = (uint64_t)1 << (bits - 1);
		if (v > lim) {
			snprintf(err, errlen, "'%.40s' does not fit in %zu byte(s)", s, size);
			return -ERANGE;
		}
		v = (uint64_t)0 - v;
	} else if (bits < 64 && v >> bits) {
		snprintf(err, errlen, "'%.40s' does not fit in %zu byte(s)", s, size);
		return -ERANGE;
	}
	for (size_t i = 0; i < size; i++)
		out[i] = i < 8 ? (uint8_t)(v >> (8 * i)) : (neg ? 0xff : 0);
	return 0;
}

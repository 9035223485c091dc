/* libFuzzer target for the control socket's request parser (src/runtime/control_proto.c):
 * the bytes a client sends, header then payload, exactly as the service thread reads them,
 * plus the map key/value parser that `update` applies to request arguments. Properties:
 * no crash or sanitizer report; an accepted request has argc within the op's bounds and
 * every argument NUL-terminated, non-empty and inside the payload; re-encoding an
 * accepted request gives back the same bytes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/control_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256];
	struct nbc_header h;
	struct nbc_request req;
	if (size < NBC_HEADER_SIZE)
		return 0;
	nbc_header_decode(data, &h);
	if (nbc_check_request_header(&h, err, sizeof(err)) != 0)
		return 0;
	size_t len = size - NBC_HEADER_SIZE;
	if (len > h.len)
		len = h.len; /* the server reads exactly h.len bytes */
	/* a private copy of exactly the payload, so ASan sees any read beyond it */
	uint8_t *payload = malloc(len ? len : 1);
	if (!payload)
		return 0;
	memcpy(payload, data + NBC_HEADER_SIZE, len);
	if (nbc_parse_request(&h, payload, len, &req, err, sizeof(err)) == 0) {
		if (req.argc > NBC_MAX_ARGS)
			abort();
		for (unsigned i = 0; i < req.argc; i++) {
			const char *a = req.argv[i];
			if ((const uint8_t *)a < payload || (const uint8_t *)a >= payload + len)
				abort();
			size_t l = strnlen(a, (size_t)(payload + len - (const uint8_t *)a));
			if (l == 0 || (const uint8_t *)a + l >= payload + len)
				abort();
		}
		static uint8_t again[NBC_HEADER_SIZE + NBC_MAX_REQUEST];
		long n = nbc_encode_request(req.op, req.flags, req.argc, req.argv, again,
					    sizeof(again));
		if (n != (long)(NBC_HEADER_SIZE + len) || memcmp(again + NBC_HEADER_SIZE, payload, len))
			abort();
		/* update's key/value parsing on the arguments, for every map size class */
		static const size_t sizes[] = {1, 2, 4, 8, 12, 64};
		uint8_t out[64];
		for (unsigned i = 0; i < req.argc; i++)
			for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
				nbc_parse_value(req.argv[i], out, sizes[k], err, sizeof(err));
	}
	free(payload);
	return 0;
}

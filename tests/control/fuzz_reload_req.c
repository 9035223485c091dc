/* libFuzzer: a reload request as published by another rank (tuner_reload_req.c). What
 * decodes must be a safe spec and re-encode to the same words. Inputs starting with 'S'
 * are a spec instead: what encodes must decode to the same spec (the check word keeps
 * random words from decoding, so this half reaches the path rules). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/tuner/tuner_reload_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t w[RELOAD_REQ_WORDS] = {0}, again[RELOAD_REQ_WORDS];
	if (size > 1 && data[0] == 'S') {
		char in[RELOAD_REQ_SPEC_BYTES + 64], out[RELOAD_REQ_SPEC_BYTES];
		size_t n = size - 1 < sizeof(in) - 1 ? size - 1 : sizeof(in) - 1;
		memcpy(in, data + 1, n);
		in[n] = '\0';
		uint64_t c;
		unsigned h;
		if (reload_req_encode(w, 7, 9, 1u << 2, in) == 0 &&
		    (reload_req_decode(w, 6, out, &c, &h) != 0 || strcmp(out, in) || h != 2 ||
		     !reload_req_spec_ok(out) || strstr(out, "..")))
			abort();
		return 0;
	}
	memcpy(w, data, size < sizeof(w) ? size : sizeof(w));
	char spec[RELOAD_REQ_SPEC_BYTES];
	uint64_t content;
	unsigned hook;
	if (reload_req_decode(w, 6, spec, &content, &hook) == 0) {
		if (!reload_req_spec_ok(spec) || hook > 6)
			abort();
		if (reload_req_encode(again, w[0], content, (unsigned)w[2], spec) != 0 ||
		    memcmp(again, w, sizeof(w)))
			abort();
	}
	return 0;
}

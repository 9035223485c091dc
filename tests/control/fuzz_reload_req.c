/* libFuzzer: a reload request as published by another rank (tuner_reload_req.c). What
 * decodes must be a safe spec and re-encode to the same words. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/tuner/tuner_reload_req.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t w[RELOAD_REQ_WORDS] = {0}, again[RELOAD_REQ_WORDS];
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

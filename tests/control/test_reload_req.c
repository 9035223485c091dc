/* Property test of the reload requests other ranks publish (tuner_reload_req.c): what comes
 * back is exactly what one rank encoded, or an error; a mix of two requests (the word-wise
 * MAX of the agreed map), any single-bit change, relative paths and ".." are refused; random
 * words never decode into an unsafe spec. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/tuner/tuner_reload_req.h"

#define N_HOOKS 6
static int failures;
#define CHECK(c)                                                                      \
	do {                                                                          \
		if (!(c)) {                                                           \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
			failures++;                                                   \
		}                                                                     \
	} while (0)

static uint64_t rng = 0x243f6a8885a308d3ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void random_spec(char *s, size_t cap)
{
	static const char *parts[] = {"/opt/p/", "a", "b.bpf.o", ":prog", "/x", ",/", ", /y/z.o"};
	size_t n = 0;
	s[n++] = '/';
	int k = (int)(next() % 12);
	for (int i = 0; i < k; i++) {
		const char *p = parts[next() % 7];
		if (n + strlen(p) + 1 >= cap)
			break;
		memcpy(s + n, p, strlen(p));
		n += strlen(p);
	}
	s[n] = '\0';
}

int main(void)
{
	uint64_t w[RELOAD_REQ_WORDS], w2[RELOAD_REQ_WORDS], mix[RELOAD_REQ_WORDS];
	char spec[RELOAD_REQ_SPEC_BYTES], out[RELOAD_REQ_SPEC_BYTES];
	uint64_t content;
	unsigned hook;

	/* refusals at the sender */
	CHECK(reload_req_encode(w, 1, 2, 1, "rel/path.o") == -EINVAL);
	CHECK(reload_req_encode(w, 1, 2, 1, "/a/../etc/x.o") == -EINVAL);
	CHECK(reload_req_encode(w, 1, 2, 1, "/a/b.o, c.o") == -EINVAL);
	CHECK(reload_req_encode(w, 1, 2, 1, "") == -EINVAL);
	CHECK(reload_req_encode(w, 0, 2, 1, "/a.o") == -EINVAL);
	char longspec[RELOAD_REQ_SPEC_BYTES + 8];
	memset(longspec, 'a', sizeof(longspec) - 1);
	longspec[0] = '/';
	longspec[sizeof(longspec) - 1] = '\0';
	CHECK(reload_req_encode(w, 1, 2, 1, longspec) == -EINVAL);
	longspec[RELOAD_REQ_SPEC_BYTES - 1] = '\0'; /* 511 bytes: fits */
	CHECK(reload_req_encode(w, 1, 2, 1, longspec) == 0);
	CHECK(reload_req_decode(w, N_HOOKS, out, &content, &hook) == 0 && !strcmp(out, longspec));

	/* nothing published */
	memset(w, 0, sizeof(w));
	CHECK(reload_req_decode(w, N_HOOKS, out, &content, &hook) == -ENOENT);

	for (int it = 0; it < 20000; it++) {
		random_spec(spec, sizeof(spec));
		unsigned mask = next() & 1 ? 1u << (next() % N_HOOKS) : (1u << N_HOOKS) - 1;
		uint64_t id = next() | 1, c = next();
		CHECK(reload_req_encode(w, id, c, mask, spec) == 0);
		/* round trip */
		CHECK(reload_req_decode(w, N_HOOKS, out, &content, &hook) == 0);
		CHECK(!strcmp(out, spec) && content == c);
		CHECK(hook == (mask == (1u << N_HOOKS) - 1 ? N_HOOKS : (unsigned)__builtin_ctz(mask)));
		/* one bit flipped anywhere: refused (or, in the spec bytes, still refused) */
		memcpy(w2, w, sizeof(w));
		unsigned bit = (unsigned)(next() % (RELOAD_REQ_WORDS * 64));
		w2[bit / 64] ^= 1ull << (bit % 64);
		int rc = reload_req_decode(w2, N_HOOKS, out, &content, &hook);
		CHECK(rc == -EBADMSG || (rc == -ENOENT && !w2[0]));
		CHECK(reload_req_key(w2) != reload_req_key(w) || (bit / 64 != 0 && bit / 64 != 3));
		/* a concurrent different request: the published word-wise MAX is refused */
		char spec2[RELOAD_REQ_SPEC_BYTES];
		random_spec(spec2, sizeof(spec2));
		CHECK(reload_req_encode(w2, next() | 1, next(), mask, spec2) == 0);
		for (int i = 0; i < RELOAD_REQ_WORDS; i++)
			mix[i] = w[i] > w2[i] ? w[i] : w2[i];
		if (memcmp(mix, w, sizeof(w)) && memcmp(mix, w2, sizeof(w2)))
			CHECK(reload_req_decode(mix, N_HOOKS, out, &content, &hook) == -EBADMSG);
		/* random words: an error, or a spec that passes the path rule */
		for (int i = 0; i < RELOAD_REQ_WORDS; i++)
			w2[i] = next() % 3 ? next() : 0;
		if (reload_req_decode(w2, N_HOOKS, out, &content, &hook) == 0)
			CHECK(reload_req_spec_ok(out) && hook <= N_HOOKS);
	}
	if (failures) {
		fprintf(stderr, "test_reload_req: %d failure(s)\n", failures);
		return 1;
	}
	printf("test_reload_req: ok\n");
	return 0;
}

/* The CLI's JSON writer (src/tools/cli_common.c) on hostile strings (names come from object
 * files): random byte strings must always give a document that parses and is valid UTF-8;
 * ASCII strings, escapes included, and valid UTF-8 must round-trip exactly; nesting and
 * empty containers are well-formed. A property test with a fixed seed. */
#include <locale.h>
#include <stdlib.h>
#include <wchar.h>

#include "profiler/json_mini.h"
#include "test_util.h"
#include "tools/cli.h"

static char *render(const char *s, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);
	struct cli_json j;
	cli_json_init(&j, f);
	cli_json_object(&j, NULL);
	cli_json_str(&j, "s", s);
	cli_json_array(&j, "empty");
	cli_json_end(&j);
	cli_json_object(&j, "nested");
	cli_json_array(&j, "a");
	cli_json_int(&j, NULL, -3);
	cli_json_num(&j, NULL, 1.5);
	cli_json_num(&j, NULL, 0.0 / 0.0);
	cli_json_null(&j, NULL);
	cli_json_bool(&j, NULL, true);
	cli_json_uint(&j, NULL, 18446744073709551615ull);
	cli_json_end(&j);
	cli_json_end(&j);
	cli_json_end(&j);
	cli_json_finish(&j);
	fclose(f);
	return buf;
}

static bool valid_utf8(const char *s)
{
	return mbstowcs(NULL, s, 0) != (size_t)-1;
}

int main(void)
{
	CHECK(setlocale(LC_ALL, "C.UTF-8") != NULL);
	srand(12345);
	char err[256];
	int roundtrips = 0;
	for (int it = 0; it < 20000; it++) {
		unsigned char s[65];
		size_t n = (size_t)(rand() % 64);
		int kind = it % 3; /* 0 any byte, 1 printable ASCII + escapes, 2 UTF-8 text */
		for (size_t i = 0; i < n; i++) {
			unsigned char c = (unsigned char)(1 + rand() % 255);
			if (kind == 1)
				c = "ab\"\\\n\t/ z{}[],:"[rand() % 16];
			s[i] = c;
		}
		s[n] = 0;
		if (kind == 2) /* "é€😀" pieces */
			snprintf((char *)s, sizeof(s), "%s%s%s", it & 1 ? "\xc3\xa9" : "x",
				 it & 2 ? "\xe2\x82\xac" : "", it & 4 ? "\xf0\x9f\x98\x80" : "y");
		size_t len;
		char *doc = render((const char *)s, &len);
		CHECK(doc && strlen(doc) == len);
		CHECK(valid_utf8(doc));
		struct jm *v = jm_parse(doc, err, sizeof(err));
		CHECK(v != NULL);
		if (!v) {
			fprintf(stderr, "input %d: %s\n%s\n", it, err, doc);
			free(doc);
			break;
		}
		const struct jm *str = jm_get(v, "s");
		CHECK(str && str->type == JM_STR);
		/* exact when no \u escape was needed: printable ASCII, \n \t \" \\, valid UTF-8 */
		bool plain = valid_utf8((const char *)s);
		for (size_t i = 0; s[i] && plain; i++)
			plain = s[i] >= 0x20 || s[i] == '\n' || s[i] == '\t';
		for (size_t i = 0; plain && s[i]; i++)
			plain = s[i] != 0x7f;
		if (plain && str) {
			CHECK(!strcmp(str->str, (const char *)s));
			roundtrips++;
		}
		const struct jm *nested = jm_get(v, "nested"), *a = nested ? jm_get(nested, "a") : NULL;
		CHECK(a && a->type == JM_ARR && a->n == 6 && a->items[2]->type == JM_NULL);
		const struct jm *e = jm_get(v, "empty");
		CHECK(e && e->type == JM_ARR && e->n == 0);
		jm_free(v);
		free(doc);
	}
	CHECK(roundtrips > 10000);
	printf("%d of 20000 strings round-tripped exactly\n", roundtrips);
	TEST_DONE();
}

/* A small strict JSON reader for the control-plane tests: `ctl ... --json` output must be
 * valid JSON (RFC 8259 subset: no \u escapes beyond Latin-1), and the tests check fields. */
#ifndef JSON_MINI_H
#define JSON_MINI_H

#include <stddef.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };
struct jv {
	enum jtype t;
	double num;
	int b;
	char *str;          /* J_STR */
	char **keys;        /* J_OBJ */
	struct jv **items;  /* J_ARR / J_OBJ values */
	size_t n;
};

/* Parses the whole text (trailing whitespace allowed). NULL with err on any error. */
struct jv *json_parse(const char *s, char *err, size_t errlen);
void json_free(struct jv *v);
const struct jv *json_get(const struct jv *obj, const char *key); /* NULL if absent */
const struct jv *json_at(const struct jv *arr, size_t i);
/* Path lookup "a.b.0.c" (numbers index arrays). */
const struct jv *json_path(const struct jv *v, const char *path);

#endif

/* A small strict JSON parser for the tests (trace, CLI --json, control plane): builds a tree, rejects anything that is
 * not RFC 8259 JSON (trailing commas, unquoted keys, bare words). */
#ifndef NCCLBPF_TESTS_JSON_MINI_H
#define NCCLBPF_TESTS_JSON_MINI_H

#include <stdbool.h>
#include <stddef.h>

enum jm_type { JM_NULL, JM_BOOL, JM_NUM, JM_STR, JM_ARR, JM_OBJ };

struct jm {
	enum jm_type type;
	double num;
	bool b;
	char *str;          /* JM_STR */
	struct jm **items;  /* JM_ARR values / JM_OBJ values */
	char **keys;        /* JM_OBJ */
	size_t n;
};

/* NULL on a syntax error (err gets the offset and reason). */
struct jm *jm_parse(const char *text, char *err, size_t errlen);
void jm_free(struct jm *v);
const struct jm *jm_get(const struct jm *obj, const char *key);
const struct jm *jm_at(const struct jm *arr, size_t i);
/* Path lookup "a.b.0.c" (numbers index arrays); NULL if any step is absent. */
/* Member k of object o (o may be NULL): its string, NULL if absent or not a string; its
 * number, -1 if absent or not a number; element i of its array, NULL if out of range. */
const char *jm_str(const struct jm *o, const char *k);
double jm_num(const struct jm *o, const char *k);
const struct jm *jm_elem(const struct jm *o, const char *k, size_t i);
const struct jm *jm_path(const struct jm *v, const char *path);

#endif

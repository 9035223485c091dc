/* Strict JSON parser for tests: see json_mini.h. */
#include "json_mini.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jp {
	const char *s;
	size_t i;
	char *err;
	size_t errlen;
	bool failed;
};

static void jp_fail(struct jp *p, const char *why)
{
	if (!p->failed)
		snprintf(p->err, p->errlen, "offset %zu: %s", p->i, why);
	p->failed = true;
}

static void ws(struct jp *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\n' || p->s[p->i] == '\r' || p->s[p->i] == '\t')
		p->i++;
}

static struct jm *value(struct jp *p, int depth);

static char *jstring(struct jp *p)
{
	if (p->s[p->i] != '"') {
		jp_fail(p, "expected string");
		return NULL;
	}
	p->i++;
	size_t cap = 16, n = 0;
	char *out = malloc(cap);
	while (out && p->s[p->i] != '"') {
		char c = p->s[p->i];
		if (!c || (unsigned char)c < 0x20) {
			jp_fail(p, "bad string");
			free(out);
			return NULL;
		}
		if (c == '\\') {
			char e = p->s[++p->i];
			if (e == 'u') {
				for (int k = 1; k <= 4; k++)
					if (!strchr("0123456789abcdefABCDEF", p->s[p->i + k]) || !p->s[p->i + k]) {
						jp_fail(p, "bad \\u escape");
						free(out);
						return NULL;
					}
				p->i += 4;
				c = '?';
			} else if (e && strchr("\"\\/bfnrt", e)) {
				c = e == 'n' ? '\n' : e == 't' ? '\t' : e;
			} else {
				jp_fail(p, "bad escape");
				free(out);
				return NULL;
			}
		}
		if (n + 2 > cap) {
			cap *= 2;
			char *q = realloc(out, cap);
			if (!q) {
				free(out);
				return NULL;
			}
			out = q;
		}
		out[n++] = c;
		p->i++;
	}
	if (!out)
		return NULL;
	out[n] = 0;
	p->i++;
	return out;
}

static bool push(struct jm *v, struct jm *item, char *key, size_t *cap)
{
	if (v->n == *cap) {
		*cap = *cap ? *cap * 2 : 8;
		struct jm **ni = realloc(v->items, *cap * sizeof(*ni));
		if (!ni)
			return false;
		v->items = ni;
		if (v->type == JM_OBJ) {
			char **nk = realloc(v->keys, *cap * sizeof(*nk));
			if (!nk)
				return false;
			v->keys = nk;
		}
	}
	v->items[v->n] = item;
	if (v->type == JM_OBJ)
		v->keys[v->n] = key;
	v->n++;
	return true;
}

static struct jm *value(struct jp *p, int depth)
{
	ws(p);
	if (depth > 64) {
		jp_fail(p, "too deep");
		return NULL;
	}
	struct jm *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	char c = p->s[p->i];
	if (c == '{' || c == '[') {
		v->type = c == '{' ? JM_OBJ : JM_ARR;
		char close = c == '{' ? '}' : ']';
		size_t cap = 0;
		p->i++;
		ws(p);
		if (p->s[p->i] == close) {
			p->i++;
			return v;
		}
		for (;;) {
			char *key = NULL;
			ws(p);
			if (v->type == JM_OBJ) {
				key = jstring(p);
				if (!key)
					goto fail;
				ws(p);
				if (p->s[p->i] != ':') {
					free(key);
					jp_fail(p, "expected ':'");
					goto fail;
				}
				p->i++;
			}
			struct jm *item = value(p, depth + 1);
			if (!item || !push(v, item, key, &cap)) {
				free(key);
				jm_free(item);
				goto fail;
			}
			ws(p);
			if (p->s[p->i] == ',') {
				p->i++;
				continue;
			}
			if (p->s[p->i] == close) {
				p->i++;
				return v;
			}
			jp_fail(p, "expected ',' or close");
			goto fail;
		}
	}
	if (c == '"') {
		v->type = JM_STR;
		v->str = jstring(p);
		if (!v->str)
			goto fail;
		return v;
	}
	if (!strncmp(p->s + p->i, "true", 4) || !strncmp(p->s + p->i, "false", 5)) {
		v->type = JM_BOOL;
		v->b = p->s[p->i] == 't';
		p->i += v->b ? 4 : 5;
		return v;
	}
	if (!strncmp(p->s + p->i, "null", 4)) {
		p->i += 4;
		return v;
	}
	if (c == '-' || (c >= '0' && c <= '9')) {
		/* strict number grammar */
		size_t j = p->i;
		if (p->s[j] == '-')
			j++;
		if (p->s[j] == '0')
			j++;
		else if (p->s[j] >= '1' && p->s[j] <= '9')
			while (p->s[j] >= '0' && p->s[j] <= '9')
				j++;
		else
			goto badnum;
		if (p->s[j] == '.') {
			j++;
			if (!(p->s[j] >= '0' && p->s[j] <= '9'))
				goto badnum;
			while (p->s[j] >= '0' && p->s[j] <= '9')
				j++;
		}
		if (p->s[j] == 'e' || p->s[j] == 'E') {
			j++;
			if (p->s[j] == '+' || p->s[j] == '-')
				j++;
			if (!(p->s[j] >= '0' && p->s[j] <= '9'))
				goto badnum;
			while (p->s[j] >= '0' && p->s[j] <= '9')
				j++;
		}
		v->type = JM_NUM;
		v->num = strtod(p->s + p->i, NULL);
		p->i = j;
		return v;
	badnum:
		jp_fail(p, "bad number");
		goto fail;
	}
	jp_fail(p, "unexpected character");
fail:
	jm_free(v);
	return NULL;
}

struct jm *jm_parse(const char *text, char *err, size_t errlen)
{
	struct jp p = {.s = text, .err = err, .errlen = errlen};
	struct jm *v = value(&p, 0);
	if (!v)
		return NULL;
	ws(&p);
	if (p.s[p.i]) {
		jp_fail(&p, "trailing characters");
		jm_free(v);
		return NULL;
	}
	return v;
}

void jm_free(struct jm *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		jm_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

const struct jm *jm_get(const struct jm *o, const char *key)
{
	if (!o || o->type != JM_OBJ)
		return NULL;
	for (size_t i = 0; i < o->n; i++)
		if (!strcmp(o->keys[i], key))
			return o->items[i];
	return NULL;
}

const struct jm *jm_at(const struct jm *a, size_t i)
{
	return a && a->type == JM_ARR && i < a->n ? a->items[i] : NULL;
}

const char *jm_str(const struct jm *o, const char *k)
{
	const struct jm *v = o ? jm_get(o, k) : NULL;
	return v && v->type == JM_STR ? v->str : NULL;
}

double jm_num(const struct jm *o, const char *k)
{
	const struct jm *v = o ? jm_get(o, k) : NULL;
	return v && v->type == JM_NUM ? v->num : -1;
}

const struct jm *jm_elem(const struct jm *o, const char *k, size_t i)
{
	return jm_at(o ? jm_get(o, k) : NULL, i);
}

const struct jm *jm_path(const struct jm *v, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	char *save = NULL;
	for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
		v = (k[0] >= '0' && k[0] <= '9') ? jm_at(v, (size_t)atoi(k)) : jm_get(v, k);
	return v;
}

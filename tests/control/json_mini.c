#include "json_mini.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct jp {
	const char *s;
	size_t i;
	char *err;
	size_t errlen;
	int depth;
};

static void ws(struct jp *p)
{
	while (p->s[p->i] == ' ' || p->s[p->i] == '\n' || p->s[p->i] == '\t' || p->s[p->i] == '\r')
		p->i++;
}

static struct jv *fail(struct jp *p, const char *what)
{
	if (!p->err[0])
		snprintf(p->err, p->errlen, "%s at offset %zu", what, p->i);
	return NULL;
}

static struct jv *value(struct jp *p);

static char *string(struct jp *p)
{
	if (p->s[p->i] != '"')
		return (char *)fail(p, "expected string");
	p->i++;
	size_t cap = 16, n = 0;
	char *out = malloc(cap);
	for (;;) {
		char c = p->s[p->i++];
		if (!c || (unsigned char)c < 0x20) {
			free(out);
			return (char *)fail(p, "bad string");
		}
		if (c == '"')
			break;
		if (c == '\\') {
			char e = p->s[p->i++];
			if (e == 'n')
				c = '\n';
			else if (e == 't')
				c = '\t';
			else if (e == '"' || e == '\\' || e == '/')
				c = e;
			else if (e == 'u') {
				unsigned v = 0;
				for (int k = 0; k < 4; k++) {
					char h = p->s[p->i++];
					v = v * 16 + (unsigned)(h >= '0' && h <= '9' ? h - '0'
							       : h >= 'a' && h <= 'f' ? h - 'a' + 10
							       : h >= 'A' && h <= 'F' ? h - 'A' + 10 : 99);
				}
				if (v > 0xff) {
					free(out);
					return (char *)fail(p, "unsupported escape");
				}
				c = (char)v;
			} else {
				free(out);
				return (char *)fail(p, "bad escape");
			}
		}
		if (n + 2 > cap)
			out = realloc(out, cap *= 2);
		out[n++] = c;
	}
	out[n] = '\0';
	return out;
}

static struct jv *push(struct jv *v, struct jv *item, char *key)
{
	v->items = realloc(v->items, (v->n + 1) * sizeof(*v->items));
	if (v->t == J_OBJ) {
		v->keys = realloc(v->keys, (v->n + 1) * sizeof(*v->keys));
		v->keys[v->n] = key;
	}
	v->items[v->n++] = item;
	return v;
}

static struct jv *value(struct jp *p)
{
	ws(p);
	struct jv *v = calloc(1, sizeof(*v));
	char c = p->s[p->i];
	if (++p->depth > 64)
		return fail(p, "too deep");
	if (c == '{' || c == '[') {
		v->t = c == '{' ? J_OBJ : J_ARR;
		p->i++;
		ws(p);
		if (p->s[p->i] == (c == '{' ? '}' : ']')) {
			p->i++;
			p->depth--;
			return v;
		}
		for (;;) {
			char *key = NULL;
			ws(p);
			if (v->t == J_OBJ) {
				if (!(key = string(p)))
					goto bad;
				ws(p);
				if (p->s[p->i++] != ':') {
					free(key);
					fail(p, "expected ':'");
					goto bad;
				}
			}
			struct jv *item = value(p);
			if (!item) {
				free(key);
				goto bad;
			}
			push(v, item, key);
			ws(p);
			char d = p->s[p->i++];
			if (d == ',')
				continue;
			if (d == (v->t == J_OBJ ? '}' : ']'))
				break;
			fail(p, "expected ',' or a closing bracket");
			goto bad;
		}
	} else if (c == '"') {
		v->t = J_STR;
		if (!(v->str = string(p)))
			goto bad;
	} else if (!strncmp(p->s + p->i, "true", 4) || !strncmp(p->s + p->i, "false", 5)) {
		v->t = J_BOOL;
		v->b = c == 't';
		p->i += v->b ? 4 : 5;
	} else if (!strncmp(p->s + p->i, "null", 4)) {
		v->t = J_NULL;
		p->i += 4;
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		char *end;
		v->t = J_NUM;
		v->num = strtod(p->s + p->i, &end);
		p->i = (size_t)(end - p->s);
	} else {
		fail(p, "unexpected character");
		goto bad;
	}
	p->depth--;
	return v;
bad:
	json_free(v);
	return NULL;
}

struct jv *json_parse(const char *s, char *err, size_t errlen)
{
	struct jp p = {s, 0, err, errlen, 0};
	err[0] = '\0';
	struct jv *v = value(&p);
	if (!v)
		return NULL;
	ws(&p);
	if (s[p.i]) {
		json_free(v);
		snprintf(err, errlen, "trailing bytes at offset %zu", p.i);
		return NULL;
	}
	return v;
}

void json_free(struct jv *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++) {
		json_free(v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->str);
	free(v);
}

const struct jv *json_get(const struct jv *obj, const char *key)
{
	if (!obj || obj->t != J_OBJ)
		return NULL;
	for (size_t i = 0; i < obj->n; i++)
		if (!strcmp(obj->keys[i], key))
			return obj->items[i];
	return NULL;
}

const struct jv *json_at(const struct jv *arr, size_t i)
{
	return arr && arr->t == J_ARR && i < arr->n ? arr->items[i] : NULL;
}

const struct jv *json_path(const struct jv *v, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof(buf), "%s", path);
	char *save = NULL;
	for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save))
		v = (k[0] >= '0' && k[0] <= '9') ? json_at(v, (size_t)atoi(k)) : json_get(v, k);
	return v;
}

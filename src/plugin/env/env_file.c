/* NCCLBPF_ENV_FILE parser. Format (docs/env.md):
 *   # comment               (also after blanks; '#' inside a value is part of the value)
 *   NAME=value              value trimmed; "double quotes" keep blanks, \" and \\ escape
 *   [host PATTERN ...]      following lines apply on hosts matching a glob (fnmatch)
 *   [*]  or  [all]          back to lines for every host
 * Repeated names (in sections that apply) are candidates in file order; the last one is
 * the default. Any error rejects the whole file.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/env/env_plugin.h"

uint64_t env_fnv1a(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ull;
	}
	return h;
}

int env_host_matches(const char *patterns, const char *host)
{
	char buf[ENV_MAX_LINE];
	snprintf(buf, sizeof(buf), "%s", patterns);
	char short_host[256];
	snprintf(short_host, sizeof(short_host), "%s", host);
	char *dot = strchr(short_host, '.');
	if (dot)
		*dot = '\0';
	char *save = NULL;
	for (char *p = strtok_r(buf, " \t", &save); p; p = strtok_r(NULL, " \t", &save))
		if (fnmatch(p, host, 0) == 0 || fnmatch(p, short_host, 0) == 0)
			return 1;
	return 0;
}

static int fail(char *err, size_t errlen, const char *path, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int fail(char *err, size_t errlen, const char *path, int line, const char *fmt, ...)
{
	va_list ap;
	int n = snprintf(err, errlen, "%s:%d: error: ", path, line);
	if (n >= 0 && (size_t)n < errlen) {
		va_start(ap, fmt);
		vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

const struct env_var *env_file_find(const struct env_file *f, const char *name)
{
	if (!f || !name || !f->index_cap)
		return NULL;
	uint64_t h = env_fnv1a(name);
	for (size_t i = h & (f->index_cap - 1), k = 0; k < f->index_cap;
	     i = (i + 1) & (f->index_cap - 1), k++) {
		size_t v = f->index[i];
		if (!v)
			return NULL;
		const struct env_var *e = &f->vars[v - 1];
		if (e->hash == h && !strcmp(e->name, name))
			return e;
	}
	return NULL;
}

static int build_index(struct env_file *f)
{
	size_t cap = 16;
	while (cap < f->n_vars * 2 + 1)
		cap *= 2;
	f->index = calloc(cap, sizeof(size_t));
	if (!f->index)
		return -ENOMEM;
	f->index_cap = cap;
	for (size_t v = 0; v < f->n_vars; v++) {
		size_t i = f->vars[v].hash & (cap - 1);
		while (f->index[i])
			i = (i + 1) & (cap - 1);
		f->index[i] = v + 1;
	}
	return 0;
}

void env_file_free(struct env_file *f, int keep_values)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->n_vars; i++) {
		if (!keep_values)
			for (int k = 0; k < f->vars[i].n; k++)
				free((char *)f->vars[i].values[k]);
		free(f->vars[i].name);
	}
	free(f->vars);
	free(f->index);
	free(f);
}

static bool name_ok(const char *s, size_t n)
{
	if (!n || !((s[0] >= 'A' && s[0] <= 'Z') || (s[0] >= 'a' && s[0] <= 'z') || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '_'))
			return false;
	return true;
}

static int64_t parse_num(const char *v)
{
	char *end = NULL;
	errno = 0;
	long long x = strtoll(v, &end, 0);
	if (errno || !end || end == v || *end)
		return INT64_MIN;
	return x;
}

/* Decodes the value part (after '='), trimmed; quotes keep blanks. */
static int decode_value(const char *s, const char *e, char *out, const char **why)
{
	while (s < e && (*s == ' ' || *s == '\t'))
		s++;
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
		e--;
	size_t n = 0;
	if (s < e && *s == '"') {
		s++;
		bool closed = false;
		while (s < e) {
			if (*s == '\\' && s + 1 < e && (s[1] == '"' || s[1] == '\\')) {
				out[n++] = s[1];
				s += 2;
			} else if (*s == '"') {
				closed = true;
				s++;
				break;
			} else {
				out[n++] = *s++;
			}
		}
		if (!closed) {
			*why = "unterminated quote";
			return -1;
		}
		if (s != e) {
			*why = "text after the closing quote";
			return -1;
		}
	} else {
		memcpy(out, s, (size_t)(e - s));
		n = (size_t)(e - s);
	}
	out[n] = '\0';
	return 0;
}

static struct env_var *var_get(struct env_file *f, const char *name, size_t n)
{
	for (size_t i = 0; i < f->n_vars; i++)
		if (strlen(f->vars[i].name) == n && !strncmp(f->vars[i].name, name, n))
			return &f->vars[i];
	if (f->n_vars == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 16;
		struct env_var *v = realloc(f->vars, cap * sizeof(*v));
		if (!v)
			return NULL;
		f->vars = v;
		f->cap = cap;
	}
	struct env_var *v = &f->vars[f->n_vars];
	memset(v, 0, sizeof(*v));
	v->name = strndup(name, n);
	if (!v->name)
		return NULL;
	v->hash = env_fnv1a(v->name);
	f->n_vars++;
	return v;
}

int env_file_parse(const char *text, size_t len, const char *path, const char *host,
		   struct env_file **out, char *err, size_t errlen)
{
	*out = NULL;
	if (len > ENV_MAX_FILE)
		return fail(err, errlen, path, 0, "file larger than %u bytes", ENV_MAX_FILE);
	struct env_file *f = calloc(1, sizeof(*f));
	char *value = malloc(ENV_MAX_LINE + 1);
	if (!f || !value) {
		free(f);
		free(value);
		snprintf(err, errlen, "%s: out of memory", path);
		return -ENOMEM;
	}
	bool applies = true;
	int line = 0, rc = 0;
	const char *p = text, *end = text + len;
	while (p < end && rc == 0) {
		line++;
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;
		const char *next = nl ? nl + 1 : end;
		if (memchr(p, '\0', (size_t)(le - p))) {
			rc = fail(err, errlen, path, line, "NUL byte");
			break;
		}
		if (le - p > ENV_MAX_LINE) {
			rc = fail(err, errlen, path, line, "line longer than %d bytes", ENV_MAX_LINE);
			break;
		}
		const char *s = p;
		while (s < le && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		const char *e = le;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		p = next;
		if (s == e || *s == '#')
			continue;
		if (*s == '[') {
			if (e[-1] != ']' || e - s < 2) {
				rc = fail(err, errlen, path, line, "section header without ']'");
				break;
			}
			char sec[ENV_MAX_LINE + 1];
			size_t n = (size_t)(e - s - 2);
			memcpy(sec, s + 1, n);
			sec[n] = '\0';
			char *q = sec;
			while (*q == ' ' || *q == '\t')
				q++;
			if (!strcmp(q, "*") || !strcmp(q, "all")) {
				applies = true;
			} else if (!strncmp(q, "host", 4) && (q[4] == ' ' || q[4] == '\t')) {
				q += 4;
				while (*q == ' ' || *q == '\t')
					q++;
				if (!*q) {
					rc = fail(err, errlen, path, line, "[host] without a pattern");
					break;
				}
				applies = env_host_matches(q, host ? host : "") != 0;
			} else {
				rc = fail(err, errlen, path, line,
					  "unknown section '[%s]' (expected [host PATTERN...] or [*])", q);
				break;
			}
			continue;
		}
		const char *eq = memchr(s, '=', (size_t)(e - s));
		if (!eq) {
			rc = fail(err, errlen, path, line, "expected NAME=value");
			break;
		}
		const char *ne = eq;
		while (ne > s && (ne[-1] == ' ' || ne[-1] == '\t'))
			ne--;
		if (!name_ok(s, (size_t)(ne - s))) {
			rc = fail(err, errlen, path, line, "invalid variable name '%.*s'",
				  (int)(ne - s > 64 ? 64 : ne - s), s);
			break;
		}
		const char *why = NULL;
		if (decode_value(eq + 1, e, value, &why) < 0) {
			rc = fail(err, errlen, path, line, "%s", why);
			break;
		}
		if (!applies)
			continue;
		struct env_var *v = var_get(f, s, (size_t)(ne - s));
		if (!v) {
			rc = -ENOMEM;
			snprintf(err, errlen, "%s: out of memory", path);
			break;
		}
		if (v->n == ENV_MAX_CANDIDATES) {
			rc = fail(err, errlen, path, line, "more than %d values for %s on this host",
				  ENV_MAX_CANDIDATES, v->name);
			break;
		}
		char *copy = strdup(value);
		if (!copy) {
			rc = -ENOMEM;
			snprintf(err, errlen, "%s: out of memory", path);
			break;
		}
		v->values[v->n] = copy;
		v->lines[v->n] = line;
		v->nums[v->n] = parse_num(copy);
		v->n++;
	}
	free(value);
	if (rc == 0 && build_index(f) < 0) {
		rc = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
	}
	if (rc) {
		env_file_free(f, 0);
		return rc;
	}
	*out = f;
	return 0;
}

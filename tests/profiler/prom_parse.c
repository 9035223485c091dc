/* Strict Prometheus text-format parser (prom_parse.h). */
#include "prom_parse.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FAMILIES 256
#define MAX_SERIES 8192

struct family {
	char name[128];
	char type[16];
	bool help, typed, closed;
};

struct series_key {
	char text[1024]; /* name + sorted labels, for duplicate detection */
};

struct hist {
	char base[1200]; /* family + labels without le */
	double last_le, last_cum, inf, count;
	bool has_inf, has_count, has_sum;
	int buckets;
};

struct state {
	struct family fam[MAX_FAMILIES];
	int n_fam;
	int current; /* index of the family whose samples are being read, -1 none */
	struct series_key *keys;
	int n_keys;
	struct hist *hists;
	int n_hists;
};

static int fail(char *err, size_t errlen, int line, const char *fmt, ...)
{
	char msg[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(err, errlen, "line %d: %s", line, msg);
	return -1;
}

static bool name_start(int c)
{
	return isalpha(c) || c == '_' || c == ':';
}
static bool name_char(int c)
{
	return isalnum(c) || c == '_' || c == ':';
}

static const char *parse_name(const char *p, char *out, size_t cap, bool label)
{
	size_t n = 0;
	if (!(label ? (isalpha((unsigned char)*p) || *p == '_') : name_start((unsigned char)*p)))
		return NULL;
	while (*p && (label ? (isalnum((unsigned char)*p) || *p == '_') : name_char((unsigned char)*p))) {
		if (n + 1 >= cap)
			return NULL;
		out[n++] = *p++;
	}
	out[n] = 0;
	return p;
}

static bool parse_value(const char *s, double *v)
{
	if (!strcmp(s, "+Inf") || !strcmp(s, "Inf")) {
		*v = INFINITY;
		return true;
	}
	if (!strcmp(s, "-Inf")) {
		*v = -INFINITY;
		return true;
	}
	if (!strcmp(s, "NaN")) {
		*v = NAN;
		return true;
	}
	char *end = NULL;
	*v = strtod(s, &end);
	if (!end || end == s || *end)
		return false;
	/* strtod also takes hex floats, "inf", "nan": the format does not */
	for (const char *q = s; *q; q++)
		if (!(isdigit((unsigned char)*q) || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' ||
		      *q == '-'))
			return false;
	return true;
}

static struct family *family_of(struct state *st, const char *name, const char **suffix)
{
	*suffix = "";
	for (int i = 0; i < st->n_fam; i++)
		if (!strcmp(st->fam[i].name, name))
			return &st->fam[i];
	static const char *const sfx[] = {"_bucket", "_sum", "_count"};
	size_t n = strlen(name);
	for (int k = 0; k < 3; k++) {
		size_t m = strlen(sfx[k]);
		if (n > m && !strcmp(name + n - m, sfx[k])) {
			for (int i = 0; i < st->n_fam; i++)
				if (strlen(st->fam[i].name) == n - m &&
				    !strncmp(st->fam[i].name, name, n - m) &&
				    (!strcmp(st->fam[i].type, "histogram") ||
				     !strcmp(st->fam[i].type, "summary"))) {
					*suffix = sfx[k];
					return &st->fam[i];
				}
		}
	}
	return NULL;
}

static int cmp_label(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

static int parse_sample(const char *line, struct prom_sample *s, char *err, size_t errlen,
			int ln)
{
	memset(s, 0, sizeof(*s));
	const char *p = parse_name(line, s->name, sizeof(s->name), false);
	if (!p)
		return fail(err, errlen, ln, "bad metric name");
	if (*p == '{') {
		p++;
		while (*p != '}') {
			if (s->n_labels >= PROM_MAX_LABELS)
				return fail(err, errlen, ln, "too many labels");
			char *ln_ = s->label[s->n_labels][0];
			p = parse_name(p, ln_, 160, true);
			if (!p)
				return fail(err, errlen, ln, "bad label name");
			if (!strncmp(ln_, "__", 2))
				return fail(err, errlen, ln, "reserved label name %s", ln_);
			if (*p++ != '=' || *p++ != '"')
				return fail(err, errlen, ln, "label %s: expected =\"", ln_);
			char *v = s->label[s->n_labels][1];
			size_t n = 0;
			while (*p != '"') {
				if (!*p || *p == '\n')
					return fail(err, errlen, ln, "unterminated label value");
				char c = *p++;
				if (c == '\\') {
					c = *p++;
					if (c == 'n')
						c = '\n';
					else if (c != '\\' && c != '"')
						return fail(err, errlen, ln, "bad escape \\%c", c);
				}
				if (n + 1 >= 160)
					return fail(err, errlen, ln, "label value too long");
				v[n++] = c;
			}
			v[n] = 0;
			p++;
			for (int i = 0; i < s->n_labels; i++)
				if (!strcmp(s->label[i][0], ln_))
					return fail(err, errlen, ln, "duplicate label %s", ln_);
			s->n_labels++;
			if (*p == ',')
				p++;
			else if (*p != '}')
				return fail(err, errlen, ln, "expected , or }");
		}
		p++;
	}
	if (*p != ' ')
		return fail(err, errlen, ln, "expected one space before the value");
	p++;
	char val[64];
	size_t n = 0;
	while (*p && *p != ' ' && n + 1 < sizeof(val))
		val[n++] = *p++;
	val[n] = 0;
	if (!parse_value(val, &s->value))
		return fail(err, errlen, ln, "bad value '%s'", val);
	if (*p == ' ') { /* optional timestamp: an integer */
		p++;
		if (*p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return fail(err, errlen, ln, "bad timestamp");
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p)
		return fail(err, errlen, ln, "trailing characters");
	return 0;
}

static void series_text(const struct prom_sample *s, bool skip_le, char *out, size_t cap)
{
	char sorted[PROM_MAX_LABELS][330];
	int n = 0;
	for (int i = 0; i < s->n_labels; i++) {
		if (skip_le && !strcmp(s->label[i][0], "le"))
			continue;
		snprintf(sorted[n++], sizeof(sorted[0]), "%s=%s", s->label[i][0], s->label[i][1]);
	}
	qsort(sorted, (size_t)n, sizeof(sorted[0]), cmp_label);
	size_t len = (size_t)snprintf(out, cap, "%s", skip_le ? "" : s->name);
	for (int i = 0; i < n && len < cap; i++)
		len += (size_t)snprintf(out + len, cap - len, "|%s", sorted[i]);
}

static int check_hists(struct state *st, char *err, size_t errlen)
{
	for (int i = 0; i < st->n_hists; i++) {
		struct hist *h = &st->hists[i];
		if (!h->has_inf || !h->has_count || !h->has_sum)
			return fail(err, errlen, 0, "histogram %s incomplete (+Inf %d count %d sum %d)",
				    h->base, h->has_inf, h->has_count, h->has_sum);
		if (h->count != h->inf)
			return fail(err, errlen, 0, "histogram %s: _count %g != +Inf bucket %g",
				    h->base, h->count, h->inf);
	}
	return 0;
}

static struct hist *hist_of(struct state *st, const char *fam, const struct prom_sample *s)
{
	char base[1200], lab[900];
	series_text(s, true, lab, sizeof(lab));
	snprintf(base, sizeof(base), "%.200s%s", fam, lab);
	for (int i = 0; i < st->n_hists; i++)
		if (!strcmp(st->hists[i].base, base))
			return &st->hists[i];
	if (st->n_hists >= MAX_SERIES)
		return NULL;
	struct hist *h = &st->hists[st->n_hists++];
	memset(h, 0, sizeof(*h));
	snprintf(h->base, sizeof(h->base), "%s", base);
	h->last_le = -INFINITY;
	return h;
}

int prom_parse(const char *text, char *err, size_t errlen)
{
	struct state *st = calloc(1, sizeof(*st));
	if (!st)
		return fail(err, errlen, 0, "out of memory");
	st->keys = calloc(MAX_SERIES, sizeof(*st->keys));
	st->hists = calloc(MAX_SERIES, sizeof(*st->hists));
	st->current = -1;
	int rc = 0, ln = 0;
	size_t tl = strlen(text);
	if (!st->keys || !st->hists) {
		rc = fail(err, errlen, 0, "out of memory");
		goto out;
	}
	if (tl && text[tl - 1] != '\n') {
		rc = fail(err, errlen, 0, "text does not end with a newline");
		goto out;
	}
	const char *p = text;
	while (*p) {
		ln++;
		const char *e = strchr(p, '\n');
		size_t n = (size_t)(e - p);
		char line[2048];
		if (n >= sizeof(line)) {
			rc = fail(err, errlen, ln, "line too long");
			goto out;
		}
		memcpy(line, p, n);
		line[n] = 0;
		p = e + 1;
		if (!n)
			continue;
		if (line[0] == '#') {
			char kw[8], name[128];
			if (sscanf(line, "# %7s %127s", kw, name) != 2 ||
			    (strcmp(kw, "HELP") && strcmp(kw, "TYPE")))
				continue; /* a plain comment */
			const char *q = parse_name(name, name, sizeof(name), false);
			if (!q || *q) {
				rc = fail(err, errlen, ln, "bad family name in %s", kw);
				goto out;
			}
			struct family *f = NULL;
			for (int i = 0; i < st->n_fam; i++)
				if (!strcmp(st->fam[i].name, name))
					f = &st->fam[i];
			if (!f) {
				if (st->n_fam >= MAX_FAMILIES) {
					rc = fail(err, errlen, ln, "too many families");
					goto out;
				}
				f = &st->fam[st->n_fam++];
				snprintf(f->name, sizeof(f->name), "%s", name);
			}
			if (f->closed || (st->current >= 0 && &st->fam[st->current] == f)) {
				rc = fail(err, errlen, ln, "%s for %s after its samples", kw, name);
				goto out;
			}
			if (!strcmp(kw, "HELP")) {
				if (f->help) {
					rc = fail(err, errlen, ln, "second HELP for %s", name);
					goto out;
				}
				f->help = true;
			} else {
				if (f->typed) {
					rc = fail(err, errlen, ln, "second TYPE for %s", name);
					goto out;
				}
				const char *t = line + strlen("# TYPE ") + strlen(name);
				if (*t != ' ') {
					rc = fail(err, errlen, ln, "TYPE without a type");
					goto out;
				}
				t++;
				if (strcmp(t, "counter") && strcmp(t, "gauge") && strcmp(t, "histogram") &&
				    strcmp(t, "summary") && strcmp(t, "untyped")) {
					rc = fail(err, errlen, ln, "unknown type '%s'", t);
					goto out;
				}
				snprintf(f->type, sizeof(f->type), "%s", t);
				f->typed = true;
			}
			continue;
		}
		struct prom_sample s;
		if ((rc = parse_sample(line, &s, err, errlen, ln)))
			goto out;
		const char *suffix;
		struct family *f = family_of(st, s.name, &suffix);
		if (!f || !f->typed) {
			rc = fail(err, errlen, ln, "sample %s without a TYPE before it", s.name);
			goto out;
		}
		int fi = (int)(f - st->fam);
		if (st->current != fi) {
			if (f->closed) {
				rc = fail(err, errlen, ln, "samples of %s are not contiguous", f->name);
				goto out;
			}
			if (st->current >= 0)
				st->fam[st->current].closed = true;
			st->current = fi;
		}
		if (st->n_keys >= MAX_SERIES) {
			rc = fail(err, errlen, ln, "too many series");
			goto out;
		}
		series_text(&s, false, st->keys[st->n_keys].text, sizeof(st->keys[0].text));
		for (int i = 0; i < st->n_keys; i++)
			if (!strcmp(st->keys[i].text, st->keys[st->n_keys].text)) {
				rc = fail(err, errlen, ln, "duplicate series %s", st->keys[i].text);
				goto out;
			}
		st->n_keys++;
		if (!strcmp(f->type, "counter")) {
			size_t nl = strlen(s.name);
			if (nl < 6 || strcmp(s.name + nl - 6, "_total")) {
				rc = fail(err, errlen, ln, "counter %s does not end in _total", s.name);
				goto out;
			}
			if (!(s.value >= 0)) {
				rc = fail(err, errlen, ln, "counter %s negative or NaN", s.name);
				goto out;
			}
		}
		if (!strcmp(f->type, "histogram")) {
			if (!*suffix) {
				rc = fail(err, errlen, ln, "histogram sample %s without a suffix", s.name);
				goto out;
			}
			struct hist *h = hist_of(st, f->name, &s);
			if (!h) {
				rc = fail(err, errlen, ln, "too many histograms");
				goto out;
			}
			if (!strcmp(suffix, "_bucket")) {
				const char *le = NULL;
				for (int i = 0; i < s.n_labels; i++)
					if (!strcmp(s.label[i][0], "le"))
						le = s.label[i][1];
				double lv;
				if (!le || !parse_value(le, &lv)) {
					rc = fail(err, errlen, ln, "bucket without a valid le");
					goto out;
				}
				if (h->has_inf || !(lv > h->last_le)) {
					rc = fail(err, errlen, ln, "le %s not increasing", le);
					goto out;
				}
				if (s.value < h->last_cum) {
					rc = fail(err, errlen, ln, "bucket le=%s not cumulative", le);
					goto out;
				}
				h->last_le = lv;
				h->last_cum = s.value;
				h->buckets++;
				if (isinf(lv)) {
					h->has_inf = true;
					h->inf = s.value;
				}
			} else if (!strcmp(suffix, "_count")) {
				h->has_count = true;
				h->count = s.value;
			} else {
				h->has_sum = true;
			}
		}
	}
	rc = check_hists(st, err, errlen);
out:
	free(st->keys);
	free(st->hists);
	free(st);
	return rc;
}

int prom_find(const char *text, const char *name, const char *const *labels, double *value)
{
	int found = 0;
	const char *p = text;
	while (*p) {
		const char *e = strchr(p, '\n');
		if (!e)
			break;
		char line[2048];
		size_t n = (size_t)(e - p);
		if (n < sizeof(line) && p[0] != '#') {
			memcpy(line, p, n);
			line[n] = 0;
			struct prom_sample s;
			char err[64];
			if (parse_sample(line, &s, err, sizeof(err), 0) == 0 && !strcmp(s.name, name)) {
				bool all = true;
				for (int k = 0; labels && labels[k] && all; k++) {
					const char *eq = strchr(labels[k], '=');
					bool m = false;
					for (int i = 0; eq && i < s.n_labels; i++)
						if (strlen(s.label[i][0]) == (size_t)(eq - labels[k]) &&
						    !strncmp(s.label[i][0], labels[k], (size_t)(eq - labels[k])) &&
						    !strcmp(s.label[i][1], eq + 1))
							m = true;
					all = m;
				}
				if (all) {
					found++;
					*value = s.value;
				}
			}
		}
		p = e + 1;
	}
	return found == 1 ? 0 : -1;
}

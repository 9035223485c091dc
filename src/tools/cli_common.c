/* Shared CLI helpers (tools/cli.h): messages, option values, range-checked numbers, JSON
 * writer, colour decision. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

void cli_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "ncclbpf %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "ncclbpf %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see `ncclbpf help %s`)\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
		  const char **val)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n))
		return 0;
	if (a[n] == '=') {
		*val = a + n + 1;
		if (!**val) {
			cli_usage_error(cmd, "%s needs a value (got an empty one)", name);
			return -1;
		}
		return 1;
	}
	if (a[n])
		return 0;
	if (*i + 1 >= argc) {
		cli_usage_error(cmd, "%s needs a value", name);
		return -1;
	}
	*val = argv[++*i];
	if (!**val) { /* `-o ""` from an unset shell variable: never a file named "" */
		cli_usage_error(cmd, "%s needs a value (got an empty one)", name);
		return -1;
	}
	return 1;
}

int cli_parse_range(const char *cmd, const char *opt, const char *text, long long min,
		    long long max, long long *out)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(text, &end, 0);
	if (!*text || *end || errno == ERANGE) {
		cli_usage_error(cmd, "%s: '%s' is not an integer", opt, text);
		return -1;
	}
	if (v < min || v > max) {
		cli_usage_error(cmd, "%s: %lld is out of range (%lld to %lld)", opt, v, min, max);
		return -1;
	}
	*out = v;
	return 0;
}

/* ---- JSON ---- */

void cli_json_init(struct cli_json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->first[0] = true;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one (stray
 * continuation byte, truncated sequence, overlong form, surrogate, > U+10FFFF). */
static int utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	int n = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc2 ? 2 : 0;
	if (n == 0 || c > 0xf4)
		return 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0) ||
	    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))
		return 0;
	return n;
}

/* Names come from untrusted files: control characters are escaped and bytes that are not
 * UTF-8 become U+FFFD, so the document is always valid JSON. */
static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(f, "\\u%04x", *p);
			} else if (*p < 0x80) {
				fputc(*p, f);
			} else {
				int n = utf8_len(p);
				if (n) {
					fwrite(p, 1, (size_t)n, f);
					p += n - 1;
				} else {
					fputs("\\ufffd", f);
				}
			}
		}
	}
	fputc('"', f);
}

/* Separator, indentation and key before a value. */
static void json_pre(struct cli_json *j, const char *key)
{
	if (j->depth > 0) {
		fputs(j->first[j->depth] ? "\n" : ",\n", j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	j->first[j->depth] = false;
	if (key) {
		json_string(j->f, key);
		fputs(": ", j->f);
	}
}

static void json_open(struct cli_json *j, const char *key, char c)
{
	json_pre(j, key);
	fputc(c, j->f);
	if (j->depth + 1 < CLI_JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
	j->kind[j->depth] = c;
}

void cli_json_object(struct cli_json *j, const char *key)
{
	json_open(j, key, '{');
}

void cli_json_array(struct cli_json *j, const char *key)
{
	json_open(j, key, '[');
}

void cli_json_end(struct cli_json *j)
{
	bool empty = j->first[j->depth];
	char c = j->kind[j->depth] == '[' ? ']' : '}';
	if (j->depth > 0)
		j->depth--;
	if (!empty) {
		fputc('\n', j->f);
		for (int i = 0; i < j->depth; i++)
			fputs("  ", j->f);
	}
	fputc(c, j->f);
}

void cli_json_str(struct cli_json *j, const char *key, const char *s)
{
	json_pre(j, key);
	if (s)
		json_string(j->f, s);
	else
		fputs("null", j->f);
}

void cli_json_int(struct cli_json *j, const char *key, long long v)
{
	json_pre(j, key);
	fprintf(j->f, "%lld", v);
}

void cli_json_uint(struct cli_json *j, const char *key, unsigned long long v)
{
	json_pre(j, key);
	fprintf(j->f, "%llu", v);
}

void cli_json_num(struct cli_json *j, const char *key, double v)
{
	json_pre(j, key);
	if (isfinite(v))
		fprintf(j->f, "%.6g", v);
	else
		fputs("null", j->f);
}

void cli_json_bool(struct cli_json *j, const char *key, bool v)
{
	json_pre(j, key);
	fputs(v ? "true" : "false", j->f);
}

void cli_json_null(struct cli_json *j, const char *key)
{
	json_pre(j, key);
	fputs("null", j->f);
}

void cli_json_finish(struct cli_json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}

bool cli_use_color(FILE *f)
{
	const char *nc = getenv("NO_COLOR");
	if (nc && *nc)
		return false;
	const char *term = getenv("TERM");
	if (term && !strcmp(term, "dumb"))
		return false;
	return isatty(fileno(f));
}

void cli_exe_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	if (n <= 0) {
		snprintf(buf, len, ".");
		return;
	}
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = '\0';
}

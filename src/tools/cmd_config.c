/* ncclbpf config OBJ [NAME=VALUE | NAME[I]=VALUE ...] [-o OUT]: reads or changes a policy's
 * configuration - its `const volatile` globals in .rodata (libbpf's convention) - without a
 * compiler. Without assignments it lists them. With them it writes a patched copy, but only
 * after the copy loads and every program in it verifies (strict), atomically.
 *
 * Values are integers (negative ones allowed). A scalar of 1, 2, 4 or 8 bytes takes
 * NAME=VALUE; an array takes NAME[I]=VALUE with 4-byte elements by default, or
 * NAME[I]:8=VALUE for 8-byte ones. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/tune_input.h"
#include "tools/tune_object.h"

int cmd_config(int argc, char **argv);

static void config_usage(FILE *f)
{
	fprintf(f, "usage: ncclbpf config OBJ                       list the .rodata configuration\n"
		   "       ncclbpf config OBJ NAME=V [NAME[I]=V] [NAME[I]:8=V] -o OUT\n"
		   "  writes a copy with the values changed, verified before it is written\n");
}

static void print_sym(const unsigned char *b, const struct tune_rodata_sym *s)
{
	printf("%-24s %4zu B  ", s->name, s->size);
	if (s->size == 1 || s->size == 2 || s->size == 4 || s->size == 8) {
		uint64_t v = 0;
		memcpy(&v, b + s->offset, s->size);
		int64_t sv = s->size == 8 ? (int64_t)v : s->size == 4 ? (int32_t)v : s->size == 2 ? (int16_t)v : (int8_t)v;
		printf("%lld", (long long)sv);
		if (sv < 0)
			printf(" (0x%llx)", (unsigned long long)v);
	} else if (s->size % 4 == 0 && s->size <= 256) {
		printf("[");
		for (size_t i = 0; i < s->size; i += 4) {
			int32_t v;
			memcpy(&v, b + s->offset + i, 4);
			printf("%s%d", i ? ", " : "", v);
		}
		printf("] (as 4-byte elements)");
	} else {
		printf("(%zu bytes)", s->size);
	}
	printf("\n");
}

/* Applies one NAME=V / NAME[I]=V / NAME[I]:8=V to b. */
static int assign(unsigned char *b, const struct tune_rodata_sym *syms, size_t n, const char *a)
{
	char name[64];
	const char *eq = strchr(a, '=');
	if (!eq || eq == a || (size_t)(eq - a) >= sizeof(name)) {
		fprintf(stderr, "ncclbpf config: '%s': want NAME=VALUE\n", a);
		return -EINVAL;
	}
	memcpy(name, a, (size_t)(eq - a));
	name[eq - a] = 0;
	long long idx = -1;
	size_t esize = 4;
	char *br = strchr(name, '[');
	if (br) {
		char *end;
		idx = strtoll(br + 1, &end, 10);
		if (end == br + 1 || *end != ']' || idx < 0) {
			fprintf(stderr, "ncclbpf config: '%s': bad index\n", a);
			return -EINVAL;
		}
		if (end[1] == ':') {
			if (!strcmp(end + 2, "8"))
				esize = 8;
			else if (strcmp(end + 2, "4")) {
				fprintf(stderr, "ncclbpf config: '%s': element size must be 4 or 8\n", a);
				return -EINVAL;
			}
		} else if (end[1]) {
			fprintf(stderr, "ncclbpf config: '%s': unexpected text after ']'\n", a);
			return -EINVAL;
		}
		*br = 0;
	}
	char *end;
	errno = 0;
	long long v = strtoll(eq + 1, &end, 0);
	if (!eq[1] || *end || errno) {
		fprintf(stderr, "ncclbpf config: '%s': value is not an integer\n", a);
		return -EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		if (strcmp(syms[i].name, name))
			continue;
		size_t off = syms[i].offset, size = syms[i].size;
		if (idx >= 0) {
			if (size % esize || (size_t)idx >= size / esize) {
				fprintf(stderr, "ncclbpf config: '%s': %s has %zu bytes: index out of range\n", a,
					name, size);
				return -ERANGE;
			}
			off += (size_t)idx * esize;
			size = esize;
		} else if (size != 1 && size != 2 && size != 4 && size != 8) {
			fprintf(stderr, "ncclbpf config: '%s': %s is %zu bytes: give an index\n", a, name, size);
			return -EINVAL;
		}
		/* the value must fit the field, as signed or unsigned */
		if (size < 8) {
			long long lo = -(1ll << (size * 8 - 1)), hi = (1ll << (size * 8)) - 1;
			if (v < lo || v > hi) {
				fprintf(stderr, "ncclbpf config: '%s': %lld does not fit %zu bytes\n", a, v, size);
				return -ERANGE;
			}
		}
		uint64_t u = (uint64_t)v;
		memcpy(b + off, &u, size); /* little-endian: the low bytes */
		return 0;
	}
	fprintf(stderr, "ncclbpf config: no .rodata variable '%s' (run without assignments to list them)\n", name);
	return -ENOENT;
}

int cmd_config(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	const char *assigns[64];
	int na = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			config_usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (strchr(argv[i], '=') && na < 64) {
			assigns[na++] = argv[i];
		} else if (!in && argv[i][0] != '-') {
			in = argv[i];
		} else {
			config_usage(stderr);
			return 2;
		}
	}
	if (!in || (na && !out) || (!na && out)) {
		config_usage(stderr);
		return 2;
	}
	char *buf = NULL;
	size_t len = 0;
	int rc = tune_read_file(in, 64u << 20, &buf, &len);
	if (rc) {
		fprintf(stderr, "%s: error: %s\n", in, strerror(-rc));
		return 1;
	}
	struct tune_rodata_sym *syms = NULL;
	size_t n = 0;
	char err[1024] = "";
	rc = tune_rodata_symbols(buf, len, &syms, &n, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: error: %s\n", in, rc == -ENOMEM ? "out of memory" : err);
		free(buf);
		return 1;
	}
	int status = 0;
	if (!na) {
		if (!n)
			printf("%s: no .rodata configuration\n", in);
		for (size_t i = 0; i < n; i++)
			print_sym((const unsigned char *)buf, &syms[i]);
	} else {
		for (int k = 0; k < na && !status; k++)
			if (assign((unsigned char *)buf, syms, n, assigns[k]))
				status = 1;
		if (!status && (tune_verify_object(buf, len, err, sizeof(err)) ||
				tune_write_atomic(out, buf, len, err, sizeof(err)))) {
			fprintf(stderr, "ncclbpf config: %s\n", err);
			status = 1;
		}
		if (!status)
			fprintf(stderr, "ncclbpf config: %d value%s changed -> %s (verified)\n", na,
				na == 1 ? "" : "s", out);
	}
	free(syms);
	free(buf);
	return status;
}

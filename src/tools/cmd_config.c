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

#include "tools/cli.h"
#include "tools/tune_input.h"
#include "tools/tune_object.h"

#define CONFIG_MAX_ASSIGN 64

/* One NAME=V, NAME[I]=V or NAME[I]:8=V argument, parsed before the object is read. */
struct assignment {
	const char *arg;
	char name[64];
	long long idx; /* -1: a scalar */
	size_t esize;
	long long value;
};

static void print_sym(const unsigned char *b, const struct tune_rodata_sym *s, int width)
{
	printf("%-*s %4zu B  ", width, s->name, s->size);
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

/* Syntax of one assignment; a usage error (-1, message printed) when it is malformed. */
static int parse_assignment(const char *a, struct assignment *as)
{
	const char *eq = strchr(a, '=');
	as->arg = a;
	as->idx = -1;
	as->esize = 4;
	if (!eq || eq == a || (size_t)(eq - a) >= sizeof(as->name)) {
		cli_usage_error("config", "'%s': want NAME=VALUE, NAME[I]=VALUE or NAME[I]:8=VALUE", a);
		return -1;
	}
	memcpy(as->name, a, (size_t)(eq - a));
	as->name[eq - a] = 0;
	char *br = strchr(as->name, '[');
	if (br) {
		char *end;
		errno = 0;
		as->idx = strtoll(br + 1, &end, 10);
		if (end == br + 1 || *end != ']' || as->idx < 0 || errno) {
			cli_usage_error("config", "'%s': bad index", a);
			return -1;
		}
		if (end[1] == ':') {
			if (!strcmp(end + 2, "8")) {
				as->esize = 8;
			} else if (strcmp(end + 2, "4")) {
				cli_usage_error("config", "'%s': element size must be 4 or 8", a);
				return -1;
			}
		} else if (end[1]) {
			cli_usage_error("config", "'%s': unexpected text after ']'", a);
			return -1;
		}
		*br = 0;
	}
	/* the value's range depends on the variable: checked against it in assign() */
	char *end;
	errno = 0;
	as->value = strtoll(eq + 1, &end, 0);
	if (!eq[1] || *end || errno) {
		cli_usage_error("config", "'%s': the value is not a 64-bit integer", a);
		return -1;
	}
	return 0;
}

/* Applies one assignment to the object's bytes b: the variable must exist in .rodata and the
 * value fit it; -errno with one message otherwise (the object refuses it: exit 1). */
static int assign(unsigned char *b, const struct tune_rodata_sym *syms, size_t n,
		  const struct assignment *as)
{
	const char *a = as->arg, *name = as->name;
	long long idx = as->idx, v = as->value;
	size_t esize = as->esize;
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
				fprintf(stderr, "ncclbpf config: '%s': %lld does not fit %zu bytes (%lld to %lld)\n",
					a, v, size, lo, hi);
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

static int cmd_config(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	struct assignment as[CONFIG_MAX_ASSIGN];
	int na = 0;
	for (int i = 1; i < argc; i++) {
		int r;
		if ((r = cli_opt_value("config", argc, argv, &i, "-o", &out)) ||
		    (r = cli_opt_value("config", argc, argv, &i, "--output", &out))) {
			if (r < 0)
				return CLI_EXIT_USAGE;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			return cli_usage_error("config", "unknown option '%s'", argv[i]);
		} else if (strchr(argv[i], '=')) { /* before or after OBJ, as it always was */
			if (na == CONFIG_MAX_ASSIGN)
				return cli_usage_error("config", "at most %d assignments",
						       CONFIG_MAX_ASSIGN);
			if (parse_assignment(argv[i], &as[na++]))
				return CLI_EXIT_USAGE;
		} else if (!in) {
			in = argv[i];
		} else {
			return cli_usage_error("config", "unexpected argument '%s' (an assignment is "
						"NAME=VALUE)", argv[i]);
		}
	}
	if (!in)
		return cli_usage_error("config", "no object given");
	if (na && !out)
		return cli_usage_error("config", "assignments need -o OUT (the copy to write)");
	if (!na && out)
		return cli_usage_error("config", "-o without assignments: nothing to change");
	if (out && cli_same_file(in, out))
		return cli_usage_error("config", "-o %s is OBJ itself: config writes a changed copy "
					"and never changes OBJ; give another path", out);
	char *buf = NULL;
	size_t len = 0;
	if (cli_read_file(in, 64u << 20, &buf, &len))
		return CLI_EXIT_REFUSED;
	struct tune_rodata_sym *syms = NULL;
	size_t n = 0;
	char err[1024] = "";
	int rc = tune_rodata_symbols(buf, len, &syms, &n, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "%s: error: %s\n", in, rc == -ENOMEM ? "out of memory" : err);
		free(buf);
		return CLI_EXIT_REFUSED;
	}
	int status = 0;
	if (!na) {
		if (!n)
			printf("%s: no .rodata configuration\n", in);
		int width = 24; /* the longest name sets the column */
		for (size_t i = 0; i < n; i++)
			if ((int)strlen(syms[i].name) > width)
				width = (int)strlen(syms[i].name);
		for (size_t i = 0; i < n; i++)
			print_sym((const unsigned char *)buf, &syms[i], width);
		/* a rule table (tune -o, rules compile) decoded, not as raw 4-byte words */
		struct tune_rule rules[TUNE_MAX_RULES];
		size_t nr = 0;
		char e[256];
		if (tune_rules_read(buf, len, rules, &nr, e, sizeof(e)) == 0) {
			printf("\ntuned_rules decoded (%zu in use; `ncclbpf rules show` prints them "
			       "alone):\n", nr);
			for (size_t i = 0; i < nr; i++) {
				char line[256];
				tune_rule_format(&rules[i], line, sizeof(line));
				printf("  [%zu] %s\n", i, line);
			}
		}
	} else {
		for (int k = 0; k < na && !status; k++)
			if (assign((unsigned char *)buf, syms, n, &as[k]))
				status = CLI_EXIT_REFUSED;
		if (!status && (tune_verify_object(buf, len, err, sizeof(err)) ||
				tune_write_atomic(out, buf, len, err, sizeof(err)))) {
			fprintf(stderr, "ncclbpf config: %s\n", err);
			status = CLI_EXIT_REFUSED;
		}
		if (!status)
			fprintf(stderr, "ncclbpf config: %d value%s changed -> %s (verified)\n", na,
				na == 1 ? "" : "s", out);
	}
	free(syms);
	free(buf);
	return status;
}

NCCLBPF_CLI_COMMAND(config, .name = "config", .run = cmd_config,
		    .synopsis = "OBJ [NAME=V | NAME[I]=V | NAME[I]:8=V ... -o OUT]",
		    .summary = "list or change a policy's .rodata configuration, no compiler",
		    .help = "Reads or changes a policy's configuration: its `const volatile` "
			    "globals in\n.rodata (libbpf's convention), without a compiler. "
			    "Without assignments it\nlists them (name, size, value; arrays as "
			    "4-byte elements); a rule table from\n`tune -o` or `rules compile` is "
			    "decoded as rules too. With assignments it\nwrites a copy to OUT with "
			    "the values changed, but only after the copy loads\nand every program "
			    "in it verifies (strict); the file is written atomically.\nOBJ is never "
			    "changed (-o naming OBJ is refused). Assignments may come before\nor "
			    "after OBJ.\n"
			    "\n"
			    "options:\n"
			    "  -o, --output OUT   the copy to write (required with assignments)\n"
			    "\n"
			    "assignments:\n"
			    "  NAME=V         a scalar of 1, 2, 4 or 8 bytes\n"
			    "  NAME[I]=V      element I of an array of 4-byte elements\n"
			    "  NAME[I]:8=V    element I of an array of 8-byte elements\n"
			    "V is a decimal or 0x hex integer (negative allowed) that must fit the "
			    "field, as\nsigned or unsigned; at most 64 assignments.\n"
			    "\n"
			    "exit status: 0 listed or written; 1 an unreadable or malformed object, "
			    "no such\nvariable, an index or value that does not fit it, or a copy "
			    "that does not verify\n(nothing written); 2 usage (including a malformed "
			    "assignment).\n");

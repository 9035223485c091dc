/* `ncclbpf disasm` against `llvm-objdump -d`, instruction by instruction, for every object
 * in build/tests/progs, build/policies and build/policies/unsafe. Functions are matched by
 * name (the program and each appended subprogram); the instruction text column must be
 * identical except where the loader resolved a relocation: the immediate of a bpf-to-bpf
 * call (objdump shows the unrelocated -1) and a map LDDW (objdump shows 0). */
#include <dirent.h>
#include <stdlib.h>

#include "cli_run.h"
#include "test_util.h"

struct insn_line {
	unsigned b0, b1; /* first two bytes: opcode, regs */
	char text[160];
};

struct func {
	char name[128];
	struct insn_line *v;
	size_t n, cap;
};

struct listing {
	struct func *f;
	size_t n;
};

static void listing_free(struct listing *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->f[i].v);
	free(l->f);
	l->f = NULL;
	l->n = 0;
}

static struct func *new_func(struct listing *l, const char *name, size_t len)
{
	l->f = realloc(l->f, (l->n + 1) * sizeof(*l->f));
	struct func *f = &l->f[l->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->name, sizeof(f->name), "%.*s", (int)len, name);
	return f;
}

/* "  12:\t<hex bytes>\t<text>[\t# comment]" -> insn; returns 0 if not such a line. */
static int parse_insn(const char *line, struct insn_line *out, int strip_comment)
{
	const char *p = line;
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return 0;
	while (*p >= '0' && *p <= '9')
		p++;
	if (p[0] != ':' || p[1] != '\t')
		return 0;
	p += 2;
	if (sscanf(p, "%x %x", &out->b0, &out->b1) != 2)
		return 0;
	const char *t = strchr(p, '\t');
	if (!t)
		return 0;
	snprintf(out->text, sizeof(out->text), "%s", t + 1);
	char *nl = strchr(out->text, '\n');
	if (nl)
		*nl = '\0';
	if (strip_comment) {
		char *c = strchr(out->text, '\t');
		if (c)
			*c = '\0';
	} else {
		/* objdump appends " <LBB0_2>" to jump targets ("r0 <<= 5" is no label) */
		char *c = strrchr(out->text, '<');
		size_t n = strlen(out->text);
		if (c && c > out->text && c[-1] == ' ' && c[1] != '<' && c[1] != '=' &&
		    out->text[n - 1] == '>')
			c[-1] = '\0';
	}
	return 1;
}

static void add_insn(struct func *f, const struct insn_line *in)
{
	if (f->n == f->cap) {
		f->cap = f->cap ? f->cap * 2 : 64;
		f->v = realloc(f->v, f->cap * sizeof(*f->v));
	}
	f->v[f->n++] = *in;
}

/* Function labels: objdump "0000000000000000 <name>:", ours "<name>:". Local labels
 * (LBB*, .L*) continue the current function. */
static int parse_label(const char *line, const char **name, size_t *len)
{
	const char *lt = strchr(line, '<');
	const char *gt = lt ? strstr(lt, ">:") : NULL;
	if (!lt || !gt || gt[2] != '\n')
		return 0;
	for (const char *p = line; p < lt; p++)
		if (!strchr("0123456789abcdef ", *p))
			return 0;
	*name = lt + 1;
	*len = (size_t)(gt - lt - 1);
	return !(*len >= 3 && !strncmp(*name, "LBB", 3)) && !(*len >= 2 && !strncmp(*name, ".L", 2));
}

static void parse_listing(char *text, struct listing *l, int ours)
{
	struct func *cur = NULL;
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n');
		const char *name;
		size_t len;
		struct insn_line in;
		if (parse_label(line, &name, &len))
			cur = new_func(l, name, len);
		else if (!strncmp(line, "Disassembly of", 14))
			cur = NULL;
		else if (cur && parse_insn(line, &in, ours))
			add_insn(cur, &in);
		line = next ? next + 1 : NULL;
	}
}

static const struct func *find_func(const struct listing *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->f[i].name, name))
			return &l->f[i];
	return NULL;
}

static int same_insn(const struct insn_line *o, const struct insn_line *r)
{
	if (r->b0 == 0x85 && (r->b1 >> 4) == 1) /* pseudo call: loader fixed the immediate */
		return !strncmp(o->text, "call ", 5) && !strncmp(r->text, "call ", 5);
	if (r->b0 == 0x18 && (r->b1 >> 4) != 0) { /* map LDDW: compare the destination */
		const char *eo = strstr(o->text, " = "), *er = strstr(r->text, " = ");
		return eo && er && eo - o->text == er - r->text &&
		       !strncmp(o->text, r->text, (size_t)(eo - o->text));
	}
	return !strcmp(o->text, r->text);
}

static size_t total_insns, total_funcs, total_objs, total_unknown;

static void compare_object(const char *objdump, const char *path)
{
	char cmd[2400], *ours_txt = NULL, *ref_txt = NULL;
	struct listing ours = {0}, ref = {0};

	snprintf(cmd, sizeof(cmd), "./ncclbpf disasm '%s' 2>&1", path);
	int st = cli_run_alloc(cmd, &ours_txt, NULL);
	CHECK(st == 0);
	if (st != 0) {
		fprintf(stderr, "%s: ncclbpf disasm failed: %.300s\n", path, ours_txt ? ours_txt : "");
		goto out;
	}
	snprintf(cmd, sizeof(cmd), "'%s' -d '%s'", objdump, path);
	CHECK(cli_run_alloc(cmd, &ref_txt, NULL) == 0);
	parse_listing(ours_txt, &ours, 1);
	parse_listing(ref_txt, &ref, 0);
	CHECK(ours.n > 0 || ref.n == 0); /* an object without code lists nothing */
	for (size_t i = 0; i < ours.n; i++) {
		const struct func *r = &ours.f[i];
		const struct func *o = find_func(&ref, r->name);
		CHECK(o != NULL);
		if (!o) {
			fprintf(stderr, "%s: function <%s> not in llvm-objdump output\n", path, r->name);
			continue;
		}
		CHECK_EQ_U64(r->n, o->n);
		for (size_t k = 0; k < r->n && k < o->n; k++) {
			/* llvm-objdump 14 prints "<unknown>" for some valid encodings (e.g. mod by
			 * the immediate 0): no reference text to compare with */
			if (!strcmp(o->v[k].text, "<unknown>")) {
				total_unknown++;
				continue;
			}
			int ok = same_insn(&o->v[k], &r->v[k]);
			CHECK(ok);
			if (!ok)
				fprintf(stderr, "%s <%s> insn %zu: ours \"%s\", llvm-objdump \"%s\"\n", path,
					r->name, k, r->v[k].text, o->v[k].text);
		}
		total_insns += r->n;
		total_funcs++;
	}
	total_objs++;
out:
	listing_free(&ours);
	listing_free(&ref);
	free(ours_txt);
	free(ref_txt);
}

static void compare_dir(const char *objdump, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		if (n > 6 && !strcmp(e->d_name + n - 6, ".bpf.o")) {
			char path[1024];
			snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			compare_object(objdump, path);
		}
	}
	closedir(d);
}

int main(int argc, char **argv)
{
	const char *objdump = argc > 1 ? argv[1] : "llvm-objdump";
	compare_dir(objdump, "tests/progs");
	compare_dir(objdump, "policies");
	compare_dir(objdump, "policies/unsafe");
	CHECK(total_objs >= 8);
	printf("compared %zu instructions in %zu functions of %zu objects (%zu that llvm-objdump "
	       "cannot decode skipped)\n", total_insns, total_funcs, total_objs, total_unknown);
	TEST_DONE();
}

/* Structural tests of the loader on clang-compiled objects (tests/progs/loader_*.bpf.c).
 * Every program is compared slot by slot with what llvm-objdump shows for the same
 * object: instruction counts, raw instructions, where each call lands after subprogram
 * appending, and the LDDW pseudo forms derived from objdump's relocation listing. Line
 * info is compared with the source files themselves.
 *
 * usage: test_loader_objects <progs build dir> <progs source dir> <llvm-objdump>
 *                            <object compiled without -g> */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/object.h"
#include "objdump_ref.h"
#include "test_util.h"

static const char *g_build, *g_src, *g_objdump, *g_nobtf;

static struct nb_object *open_prog(const char *name, struct od_ref *od, bool *have_od)
{
	char path[1024], err[256];
	struct nb_object *obj = NULL;
	snprintf(path, sizeof(path), "%s/%s.bpf.o", g_build, name);
	int ret = loader_open_file(path, &obj, err, sizeof(err));
	if (ret)
		fprintf(stderr, "%s: %s\n", path, err);
	CHECK(ret == 0 && obj);
	*have_od = g_objdump && *g_objdump && od_load(g_objdump, path, od) == 0;
	if (!*have_od)
		fprintf(stderr, "note: llvm-objdump reference unavailable for %s\n", name);
	return obj;
}

static const struct nb_program *find_prog(const struct nb_object *o, const char *name)
{
	for (size_t i = 0; i < o->prog_cnt; i++)
		if (strcmp(o->progs[i].name, name) == 0)
			return &o->progs[i];
	return NULL;
}

static const struct nb_map_def *find_map(const struct nb_object *o, const char *name, int *idx)
{
	for (size_t i = 0; i < o->map_cnt; i++)
		if (strcmp(o->maps[i].name, name) == 0) {
			if (idx)
				*idx = (int)i;
			return &o->maps[i];
		}
	return NULL;
}

/* .text (or program section) function symbol starting at byte offset off of sec */
static const struct od_sym *func_sym_at(const struct od_ref *od, const char *sec, uint64_t off)
{
	for (int i = 0; i < od->nsyms; i++)
		if (od->syms[i].kind == 'F' && strcmp(od->syms[i].sec, sec) == 0 &&
		    od->syms[i].value == off)
			return &od->syms[i];
	return NULL;
}

static const char *func_at_insn(const struct nb_program *p, long insn)
{
	for (size_t k = 0; k < p->func_cnt; k++)
		if ((long)p->funcs[k].insn == insn)
			return p->funcs[k].name;
	return NULL;
}

static void check_slot(const struct nb_object *o, const struct nb_program *p, const struct od_ref *od,
		       const struct od_sym *fs, const struct od_sec *sec, size_t i, size_t orig,
		       size_t *skip)
{
	const struct bpf_insn *in = &p->insns[i];
	struct bpf_insn ref;
	memcpy(&ref, sec->bytes + orig * 8, 8);
	const char *rel = sec->reloc[orig];
	*skip = 0;
	CHECK_EQ_U64(in->code, ref.code);
	CHECK_EQ_U64(in->dst_reg, ref.dst_reg);
	CHECK_EQ_U64((uint16_t)in->off, (uint16_t)ref.off);
	if (in->code == 0x85 && ref.src_reg == 1) {
		const char *want = NULL;
		const struct od_sym *t;
		if (*rel && strcmp(rel, ".text") != 0) {
			want = rel;
		} else if (*rel) {
			t = func_sym_at(od, ".text", (uint64_t)(ref.imm + 1) * 8);
			want = t ? t->name : NULL;
		} else {
			t = func_sym_at(od, fs->sec, (uint64_t)((long)orig + ref.imm + 1) * 8);
			want = t ? t->name : NULL;
		}
		const char *got = func_at_insn(p, (long)i + in->imm + 1);
		CHECK(want && got && strcmp(want, got) == 0);
		if (!(want && got && strcmp(want, got) == 0))
			fprintf(stderr, "  %s insn %zu: call lands at %s, objdump says %s\n", p->name,
				i, got ? got : "(no function)", want ? want : "?");
		CHECK_EQ_U64(in->src_reg, 1);
		return;
	}
	if (in->code == BPF_LDDW) {
		struct bpf_insn ref2;
		memcpy(&ref2, sec->bytes + (orig + 1) * 8, 8);
		*skip = 1;
		CHECK(i + 1 < p->insn_cnt);
		if (i + 1 >= p->insn_cnt)
			return;
		if (!*rel) {
			CHECK_EQ_U64(in->src_reg, ref.src_reg);
			CHECK_EQ_U64((uint32_t)in->imm, (uint32_t)ref.imm);
			CHECK_EQ_U64((uint32_t)in[1].imm, (uint32_t)ref2.imm);
			return;
		}
		const struct od_sym *rs = od_sym(od, rel);
		CHECK(rs != NULL);
		if (!rs)
			return;
		CHECK(in->imm >= 0 && (size_t)in->imm < o->map_cnt);
		if (in->imm < 0 || (size_t)in->imm >= o->map_cnt)
			return;
		const char *mname = o->maps[in->imm].name;
		if (strcmp(rs->sec, ".maps") == 0 || strcmp(rs->sec, "maps") == 0) {
			CHECK_EQ_U64(in->src_reg, BPF_PSEUDO_MAP_FD);
			CHECK_STR_CONTAINS(mname, rel);
			CHECK(strcmp(mname, rel) == 0);
			CHECK_EQ_U64(in[1].imm, 0);
		} else {
			const char *want_sec = rs->kind == 'd' ? rel : rs->sec;
			uint64_t want_off = (rs->kind == 'd' ? 0 : rs->value) + (uint64_t)(int64_t)ref.imm;
			CHECK_EQ_U64(in->src_reg, BPF_PSEUDO_MAP_VALUE);
			CHECK(strcmp(mname, want_sec) == 0);
			CHECK_EQ_U64((uint32_t)in[1].imm, want_off);
		}
		CHECK_EQ_U64(in[1].code, 0);
		return;
	}
	CHECK(memcmp(in, &ref, 8) == 0);
}

/* Compares every program of obj with the objdump reference. */
static void check_against_objdump(const struct nb_object *o, const struct od_ref *od)
{
	for (size_t pi = 0; pi < o->prog_cnt; pi++) {
		const struct nb_program *p = &o->progs[pi];
		const struct od_sym *ms = od_sym(od, p->name);
		CHECK(ms && ms->kind == 'F');
		if (!ms)
			continue;
		CHECK(strcmp(ms->sec, p->section) == 0);
		CHECK_EQ_U64(p->main_insn_cnt, ms->size / 8);
		CHECK(p->func_cnt >= 1 && strcmp(p->funcs[0].name, p->name) == 0 &&
		      p->funcs[0].insn == 0);
		size_t pos = 0;
		for (size_t k = 0; k < p->func_cnt; k++) {
			const struct od_sym *fs = od_sym(od, p->funcs[k].name);
			CHECK(fs && fs->kind == 'F');
			if (!fs)
				break;
			CHECK_EQ_U64(p->funcs[k].insn, pos);
			const struct od_sec *sec = od_sec(od, fs->sec);
			CHECK(sec != NULL);
			if (!sec)
				break;
			size_t n = fs->size / 8, skip;
			CHECK(fs->value / 8 + n <= sec->slots);
			for (size_t j = 0; j < n && pos + j < p->insn_cnt && fs->value / 8 + j < sec->slots;
			     j += 1 + skip)
				check_slot(o, p, od, fs, sec, pos + j, fs->value / 8 + j, &skip);
			pos += n;
		}
		CHECK_EQ_U64(p->insn_cnt, pos);
	}
}

static char **read_lines(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	char buf[1024], **v = NULL;
	*n = 0;
	if (!f)
		return NULL;
	while (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		v = realloc(v, (*n + 1) * sizeof(*v));
		v[(*n)++] = strdup(buf);
	}
	fclose(f);
	return v;
}

static void free_lines(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* Every line record names the source file, and its text is that line of the file. */
static void check_lines(const struct nb_object *o, const char *src_name)
{
	char path[1024];
	size_t nl;
	snprintf(path, sizeof(path), "%s/%s", g_src, src_name);
	char **src = read_lines(path, &nl);
	CHECK(src != NULL);
	if (!src)
		return;
	for (size_t pi = 0; pi < o->prog_cnt; pi++) {
		const struct nb_program *p = &o->progs[pi];
		CHECK(p->line_cnt > 0);
		for (size_t k = 0; k < p->line_cnt; k++) {
			const struct nb_line_info *l = &p->lines[k];
			CHECK(k == 0 || p->lines[k - 1].insn <= l->insn);
			CHECK(l->insn < p->insn_cnt);
			CHECK(l->file && strstr(l->file, src_name));
			/* line 0: compiler-generated code without a source position */
			CHECK(l->line <= nl && (l->line || !*l->line_src));
			if (l->line > nl || l->line > nl)
				fprintf(stderr, "  %s insn %u: %s:%u:%u \"%s\"\n", p->name, l->insn, l->file, l->line, l->col, l->line_src);
			if (l->line >= 1 && l->line <= nl && l->line_src) {
				/* BTF stores the line text; clang may strip leading whitespace */
				const char *want = src[l->line - 1];
				const char *got = l->line_src;
				while (*want == ' ' || *want == '\t')
					want++;
				while (*got == ' ' || *got == '\t')
					got++;
				CHECK(strcmp(want, got) == 0);
				if (strcmp(want, got) != 0)
					fprintf(stderr, "  %s line %u: '%s' vs source '%s'\n", p->name,
						l->line, got, want);
				CHECK(l->col <= strlen(src[l->line - 1]) + 1);
			}
		}
		/* each function (entry and appended subprograms) has a line at its start */
		for (size_t k = 0; k < p->func_cnt; k++) {
			const struct nb_line_info *l = loader_line_for_insn(p, p->funcs[k].insn);
			CHECK(l && l->insn == p->funcs[k].insn);
		}
	}
	free_lines(src, nl);
}

/* Line number in the source of the first line containing text. */
static unsigned src_line_of(const char *src_name, const char *text)
{
	char path[1024];
	size_t nl;
	unsigned found = 0;
	snprintf(path, sizeof(path), "%s/%s", g_src, src_name);
	char **src = read_lines(path, &nl);
	for (size_t i = 0; src && i < nl && !found; i++)
		if (strstr(src[i], text))
			found = (unsigned)i + 1;
	free_lines(src, nl);
	return found;
}

static bool prog_has_funcs(const struct nb_program *p, const char *const *names, size_t n)
{
	if (p->func_cnt != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		bool hit = false;
		for (size_t k = 0; k < p->func_cnt; k++)
			hit |= strcmp(p->funcs[k].name, names[i]) == 0;
		if (!hit)
			return false;
	}
	return true;
}

static void test_basic(void)
{
	struct od_ref od;
	bool have_od;
	struct nb_object *o = open_prog("loader_basic", &od, &have_od);
	if (!o)
		return;
	CHECK(o->has_btf && o->has_btf_ext);
	CHECK(strcmp(o->license, "Dual BSD/GPL") == 0);
	CHECK_EQ_U64(o->prog_cnt, 2);

	const struct nb_map_def *m;
	m = find_map(o, "lat_hash", NULL);
	CHECK(m && m->origin == NB_MAP_ORIGIN_BTF && m->type == 1 && m->key_size == 8 &&
	      m->value_size == sizeof(struct { uint64_t a[6]; }) && m->max_entries == 128 &&
	      m->btf_key_type && m->btf_value_type && !m->init_data);
	m = find_map(o, "counters", NULL);
	CHECK(m && m->type == 2 && m->key_size == 4 && m->value_size == 12 && m->max_entries == 16 &&
	      m->map_flags == 0 && m->btf_key_type == 0);
	m = find_map(o, "scratch", NULL);
	CHECK(m && m->type == 6 && m->key_size == 4 && m->value_size == 8 && m->max_entries == 1);
	m = find_map(o, "shared_lru", NULL);
	CHECK(m && m->type == 9 && m->key_size == 16 && m->value_size == 4 && m->max_entries == 64 &&
	      m->pinning == 1);

	/* global data: layout from the symbol table, contents from the initialisers */
	m = find_map(o, ".rodata", NULL);
	CHECK(m && m->origin == NB_MAP_ORIGIN_RODATA && m->type == 2 && m->key_size == 4 &&
	      m->max_entries == 1 && m->map_flags == (1u << 7) && m->init_data);
	if (m && m->init_data && have_od) {
		const struct od_sym *th = od_sym(&od, "threshold"), *li = od_sym(&od, "limits");
		CHECK(th && li && strcmp(th->sec, ".rodata") == 0);
		if (th && li) {
			uint64_t v;
			uint32_t l[4];
			memcpy(&v, m->init_data + th->value, 8);
			memcpy(l, m->init_data + li->value, 16);
			CHECK_EQ_U64(v, 65536);
			CHECK(l[0] == 1 && l[1] == 2 && l[2] == 3 && l[3] == 4);
		}
		/* bpf_printk's format string lives in .rodata too */
		CHECK(memmem(m->init_data, m->value_size, "new comm %llu", 14) != NULL);
	}
	m = find_map(o, ".data", NULL);
	CHECK(m && m->origin == NB_MAP_ORIGIN_DATA && m->map_flags == 0 && m->init_data);
	if (m && m->init_data && have_od) {
		const struct od_sym *ca = od_sym(&od, "calls"), *sb = od_sym(&od, "seen_bytes");
		CHECK(ca && sb);
		if (ca && sb) {
			uint64_t v;
			uint32_t s1;
			memcpy(&v, m->init_data + ca->value, 8);
			memcpy(&s1, m->init_data + sb->value + 4, 4);
			CHECK_EQ_U64(v, 7);
			CHECK_EQ_U64(s1, 5);
			CHECK_EQ_U64(m->value_size, od_sec(&od, "tuner") ? m->value_size : 0);
		}
	}
	m = find_map(o, ".bss", NULL);
	CHECK(m && m->origin == NB_MAP_ORIGIN_BSS && m->value_size == 12 && m->init_data);
	if (m && m->init_data) {
		static const uint8_t zero[12];
		CHECK(memcmp(m->init_data, zero, 12) == 0);
	}

	const struct nb_program *t = find_prog(o, "tuner_main"), *pr = find_prog(o, "profiler_main");
	CHECK(t && pr);
	if (t && pr) {
		CHECK(strcmp(t->section, "tuner") == 0 && strcmp(pr->section, "profiler") == 0);
		static const char *const tf[] = {"tuner_main", "scaled", "clamp_u64", "global_pick"};
		static const char *const pf[] = {"profiler_main", "clamp_u64"};
		CHECK(prog_has_funcs(t, tf, 4)); /* nested: scaled -> clamp_u64 (pc-relative) */
		CHECK(prog_has_funcs(pr, pf, 2));
		/* the line of the call to global_pick carries that source line */
		unsigned want = src_line_of("loader_basic.bpf.c", "ctx->algo = global_pick(");
		bool seen = false;
		for (size_t i = 0; i < t->insn_cnt; i++)
			if (t->insns[i].code == 0x85 && t->insns[i].src_reg == 1) {
				const struct nb_line_info *l = loader_line_for_insn(t, i);
				if (l && l->line == want && strstr(l->line_src, "global_pick("))
					seen = true;
			}
		CHECK(want && seen);
		/* an instruction of the appended clamp_u64 maps to clamp_u64's source lines */
		unsigned lo = src_line_of("loader_basic.bpf.c", "__u64 clamp_u64(");
		for (size_t k = 0; k < t->func_cnt; k++)
			if (strcmp(t->funcs[k].name, "clamp_u64") == 0) {
				const struct nb_line_info *l = loader_line_for_insn(t, t->funcs[k].insn + 1);
				CHECK(l && l->line >= lo && l->line <= lo + 3);
			}
	}
	CHECK(loader_line_for_insn(t, (size_t)-1) != NULL);
	if (have_od) {
		check_against_objdump(o, &od);
		od_free(&od);
	}
	check_lines(o, "loader_basic.bpf.c");
	loader_close(o);
}

static void test_legacy(void)
{
	struct od_ref od;
	bool have_od;
	struct nb_object *o = open_prog("loader_legacy", &od, &have_od);
	if (!o)
		return;
	CHECK(strcmp(o->license, "GPL") == 0);
	int ai = -1, hi = -1;
	const struct nb_map_def *a = find_map(o, "legacy_arr", &ai), *h = find_map(o, "legacy_hash", &hi);
	CHECK(a && a->origin == NB_MAP_ORIGIN_LEGACY && a->type == 2 && a->key_size == 4 &&
	      a->value_size == 8 && a->max_entries == 32 && a->map_flags == 0);
	CHECK(h && h->origin == NB_MAP_ORIGIN_LEGACY && h->type == 1 && h->key_size == 8 &&
	      h->value_size == 16 && h->max_entries == 1024 && h->map_flags == 1);
	CHECK_EQ_U64(o->prog_cnt, 4);
	const struct nb_program *p1 = find_prog(o, "first"), *p2 = find_prog(o, "second"),
			       *pc = find_prog(o, "chunk"), *pn = find_prog(o, "net_obs");
	CHECK(p1 && p2 && pc && pn);
	if (p1 && p2 && pc && pn) {
		CHECK(strcmp(p1->section, "tuner") == 0 && strcmp(p2->section, "tuner") == 0);
		CHECK(strcmp(pc->section, "tuner/chunk") == 0 && strcmp(pn->section, "net") == 0);
		CHECK(p1->func_cnt == 1 && p1->insn_cnt == p1->main_insn_cnt);
		/* the map-fd LDDW of each program names its own map */
		for (size_t i = 0; i < p1->insn_cnt; i++)
			if (p1->insns[i].code == BPF_LDDW)
				CHECK(p1->insns[i].src_reg == 1 && p1->insns[i].imm == ai);
		for (size_t i = 0; i < p2->insn_cnt; i++)
			if (p2->insns[i].code == BPF_LDDW)
				CHECK(p2->insns[i].src_reg == 1 && p2->insns[i].imm == hi);
	}
	if (have_od) {
		check_against_objdump(o, &od);
		od_free(&od);
	}
	check_lines(o, "loader_legacy.bpf.c");
	loader_close(o);
}

static void test_calls(void)
{
	struct od_ref od;
	bool have_od;
	struct nb_object *o = open_prog("loader_calls", &od, &have_od);
	if (!o)
		return;
	const struct nb_program *a = find_prog(o, "calls_a"), *b = find_prog(o, "calls_b"),
			       *s = find_prog(o, "strlit");
	CHECK(a && b && s);
	if (a && b && s) {
		static const char *const af[] = {"calls_a", "glob", "mid", "leaf"};
		static const char *const bf[] = {"calls_b", "leaf"};
		CHECK(prog_has_funcs(a, af, 4)); /* global -> static -> static */
		CHECK(prog_has_funcs(b, bf, 2)); /* second program of the same section */
		CHECK(a->main_insn_cnt < a->insn_cnt && b->main_insn_cnt < b->insn_cnt);
		/* the string literal is addressed inside .rodata.str1.1 */
		int si = -1;
		const struct nb_map_def *m = find_map(o, ".rodata.str1.1", &si);
		CHECK(m && m->map_flags == (1u << 7) && m->init_data);
		bool hit = false;
		for (size_t i = 0; m && m->init_data && i + 1 < s->insn_cnt; i++)
			if (s->insns[i].code == BPF_LDDW && s->insns[i].src_reg == 2 &&
			    s->insns[i].imm == si && (uint32_t)s->insns[i + 1].imm < m->value_size)
				hit = strcmp((char *)m->init_data + s->insns[i + 1].imm,
					     "literal string") == 0;
		CHECK(hit);
	}
	if (have_od) {
		check_against_objdump(o, &od);
		od_free(&od);
	}
	check_lines(o, "loader_calls.bpf.c");
	loader_close(o);
}

static void test_textonly(void)
{
	struct od_ref od;
	bool have_od;
	struct nb_object *o = open_prog("loader_textonly", &od, &have_od);
	if (!o)
		return;
	CHECK_EQ_U64(o->prog_cnt, 1);
	if (o->prog_cnt == 1) {
		const struct nb_program *p = &o->progs[0];
		static const char *const f[] = {"entry", "twice"};
		CHECK(strcmp(p->name, "entry") == 0 && strcmp(p->section, ".text") == 0);
		CHECK(prog_has_funcs(p, f, 2));
	}
	if (have_od) {
		check_against_objdump(o, &od);
		od_free(&od);
	}
	check_lines(o, "loader_textonly.bpf.c");
	loader_close(o);
}

/* Compiled without -g: no .BTF/.BTF.ext; legacy maps and symbol-named funcs still load. */
static void test_no_btf(void)
{
	char err[256];
	struct nb_object *o = NULL;
	int ret = loader_open_file(g_nobtf, &o, err, sizeof(err));
	if (ret)
		fprintf(stderr, "%s: %s\n", g_nobtf, err);
	CHECK(ret == 0 && o);
	if (!o)
		return;
	CHECK(!o->has_btf && !o->has_btf_ext);
	CHECK_EQ_U64(o->prog_cnt, 4);
	CHECK(find_map(o, "legacy_arr", NULL) && find_map(o, "legacy_hash", NULL));
	for (size_t i = 0; i < o->prog_cnt; i++) {
		CHECK(o->progs[i].line_cnt == 0 && o->progs[i].func_cnt == 1);
		CHECK(strcmp(o->progs[i].funcs[0].name, o->progs[i].name) == 0);
		CHECK(loader_line_for_insn(&o->progs[i], 0) == NULL);
	}
	loader_close(o);
}

static uint64_t rd(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void wr(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The same object with every REL section rewritten as RELA (addend 0), appended at the
 * end of the file: it must load into exactly the same programs and maps. */
static void test_rela(void)
{
	char path[1024], err[256];
	snprintf(path, sizeof(path), "%s/loader_basic.bpf.o", g_build);
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	fseek(f, 0, SEEK_END);
	size_t size = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *orig = malloc(size);
	CHECK(fread(orig, 1, size, f) == size);
	fclose(f);
	uint64_t shoff = rd(orig + 40, 8);
	unsigned shnum = (unsigned)rd(orig + 60, 2);
	size_t extra = 0;
	for (unsigned i = 0; i < shnum; i++) {
		const uint8_t *h = orig + shoff + i * 64;
		if (rd(h + 4, 4) == 9)
			extra += rd(h + 32, 8) / 16 * 24;
	}
	size_t base = (size + 7) & ~(size_t)7, pos = base;
	uint8_t *b = calloc(1, base + extra);
	memcpy(b, orig, size);
	int converted = 0;
	for (unsigned i = 0; i < shnum; i++) {
		uint8_t *h = b + shoff + i * 64;
		if (rd(h + 4, 4) != 9)
			continue;
		uint64_t off = rd(h + 24, 8), n = rd(h + 32, 8) / 16;
		for (uint64_t k = 0; k < n; k++) {
			memcpy(b + pos + k * 24, orig + off + k * 16, 16);
			wr(b + pos + k * 24 + 16, 0, 8);
		}
		wr(h + 4, 4, 4);       /* SHT_RELA */
		wr(h + 24, pos, 8);    /* offset */
		wr(h + 32, n * 24, 8); /* size */
		wr(h + 56, 24, 8);     /* entsize */
		pos += n * 24;
		converted++;
	}
	CHECK(converted >= 3);
	struct nb_object *a = NULL, *r = NULL;
	CHECK(loader_open_mem(orig, size, "rel", &a, err, sizeof(err)) == 0);
	int ret = loader_open_mem(b, base + extra, "rela", &r, err, sizeof(err));
	if (ret)
		fprintf(stderr, "rela: %s\n", err);
	CHECK(ret == 0);
	if (a && r) {
		CHECK_EQ_U64(a->prog_cnt, r->prog_cnt);
		CHECK_EQ_U64(a->map_cnt, r->map_cnt);
		for (size_t i = 0; i < a->prog_cnt && i < r->prog_cnt; i++) {
			CHECK_EQ_U64(a->progs[i].insn_cnt, r->progs[i].insn_cnt);
			CHECK(a->progs[i].insn_cnt == r->progs[i].insn_cnt &&
			      memcmp(a->progs[i].insns, r->progs[i].insns,
				     a->progs[i].insn_cnt * sizeof(struct bpf_insn)) == 0);
		}
	}
	loader_close(a);
	loader_close(r);
	free(b);
	free(orig);
}

static void test_errors(void)
{
	char err[256];
	struct nb_object *o = (struct nb_object *)1;
	CHECK(loader_open_file("/nonexistent/x.bpf.o", &o, err, sizeof(err)) == -ENOENT);
	CHECK(o == NULL);
	/* the caller prints the path: the message must not repeat it */
	CHECK_STR_CONTAINS(err, "No such file");
	CHECK(strstr(err, "x.bpf.o") == NULL);
	CHECK(loader_open_mem("", 0, "empty", &o, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "not an ELF file");
	/* a short text file is not an ELF, whatever its length */
	CHECK(loader_open_mem("hi\n", 3, "short", &o, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "not an ELF file");
	CHECK(loader_open_mem("hello world\n", 12, "text", &o, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "not an ELF file");
	/* a real ELF header cut short is still "truncated" */
	CHECK(loader_open_mem("\x7f" "ELF\x02\x01\x01", 7, "cut", &o, err, sizeof(err)) == -EINVAL);
	CHECK_STR_CONTAINS(err, "ELF header truncated");
	loader_close(NULL);
	CHECK(loader_line_for_insn(NULL, 0) == NULL);
}

int main(int argc, char **argv)
{
	if (argc < 5) {
		fprintf(stderr, "usage: %s <progs build dir> <progs src dir> <objdump> <nobtf.o>\n",
			argv[0]);
		return 2;
	}
	g_build = argv[1];
	g_src = argv[2];
	g_objdump = argv[3];
	g_nobtf = argv[4];
	test_basic();
	test_legacy();
	test_calls();
	test_textonly();
	test_no_btf();
	test_rela();
	test_errors();
	TEST_DONE();
}

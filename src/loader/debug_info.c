/* Source positions and function boundaries per linked program: .BTF.ext records are keyed
 * by (section, byte offset); each segment of a linked program (entry function, appended
 * subprograms) maps its section range onto program instruction indices. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_internal.h"

struct line_tmp {
	struct nb_line_info li;
	size_t seq; /* keeps the file's order for equal instruction indices */
};

static int line_cmp(const void *a, const void *b)
{
	const struct line_tmp *x = a, *y = b;
	if (x->li.insn != y->li.insn)
		return x->li.insn < y->li.insn ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static const char *func_name(struct ld_ctx *c, const struct ld_ext_sec *es,
			     const struct ld_segment *s)
{
	if (!es)
		return s->name;
	for (size_t k = 0; k < es->func_cnt; k++) {
		if (es->funcs[k].insn_off / 8 != s->start)
			continue;
		const struct ld_btf_type *t = ld_btf_type(&c->btf, es->funcs[k].type_id);
		const char *n = t ? ld_btf_str(&c->btf, t->name_off) : NULL;
		if (n && *n && strlen(n) < NB_NAME_MAX)
			return n;
	}
	return s->name;
}

int ld_program_debug_info(struct ld_ctx *c, struct nb_program *p, const struct ld_segment *segs,
			  size_t nsegs)
{
	size_t nlines = 0;

	p->funcs = calloc(nsegs ? nsegs : 1, sizeof(*p->funcs));
	if (!p->funcs)
		return ld_err(c, ENOMEM, "out of memory");
	for (size_t k = 0; k < nsegs; k++) {
		const struct ld_ext_sec *es =
			c->has_ext ? ld_btf_ext_sec(&c->ext, ld_secname(&c->elf, segs[k].shndx)) : NULL;
		p->funcs[k].insn = (uint32_t)segs[k].pos;
		snprintf(p->funcs[k].name, NB_NAME_MAX, "%s", func_name(c, es, &segs[k]));
		if (es)
			for (size_t r = 0; r < es->line_cnt; r++) {
				uint64_t idx = es->lines[r].insn_off / 8;
				nlines += idx >= segs[k].start && idx - segs[k].start < segs[k].cnt;
			}
	}
	p->func_cnt = nsegs; /* segments are in increasing position order already */
	if (!nlines)
		return 0;
	struct line_tmp *tmp = calloc(nlines, sizeof(*tmp));
	if (!tmp)
		return ld_err(c, ENOMEM, "out of memory for %zu line records", nlines);
	size_t n = 0;
	for (size_t k = 0; k < nsegs; k++) {
		const struct ld_ext_sec *es = ld_btf_ext_sec(&c->ext, ld_secname(&c->elf, segs[k].shndx));
		if (!es)
			continue;
		for (size_t r = 0; r < es->line_cnt; r++) {
			const struct ld_ext_line *l = &es->lines[r];
			uint64_t idx = l->insn_off / 8;
			if (idx < segs[k].start || idx - segs[k].start >= segs[k].cnt)
				continue;
			struct line_tmp *t = &tmp[n];
			t->seq = n++;
			t->li.insn = (uint32_t)(segs[k].pos + (idx - segs[k].start));
			t->li.file = ld_btf_str(&c->btf, l->file_off);
			t->li.line_src = ld_btf_str(&c->btf, l->line_off);
			t->li.line = l->line_col >> 10;
			t->li.col = l->line_col & 0x3ff;
		}
	}
	qsort(tmp, n, sizeof(*tmp), line_cmp);
	p->lines = calloc(n, sizeof(*p->lines));
	if (!p->lines) {
		free(tmp);
		return ld_err(c, ENOMEM, "out of memory");
	}
	for (size_t k = 0; k < n; k++)
		p->lines[k] = tmp[k].li;
	p->line_cnt = n;
	free(tmp);
	return 0;
}

const struct nb_line_info *loader_line_for_insn(const struct nb_program *prog, size_t insn)
{
	if (!prog || !prog->line_cnt)
		return NULL;
	/* last entry with lines[i].insn <= insn */
	size_t lo = 0, hi = prog->line_cnt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (prog->lines[mid].insn <= insn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &prog->lines[lo - 1] : NULL;
}

/* Programs and their linking. Every function in an executable section other than .text is
 * a program; .text functions are subprograms appended (once each) to every program that
 * calls them, transitively, with BPF_PSEUDO_CALL immediates rewritten to the appended
 * position, as libbpf does. LDDW instructions relocated against maps or global data become
 * the BPF_PSEUDO_MAP_FD / BPF_PSEUDO_MAP_VALUE forms documented in object.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_internal.h"

#define INSN_SZ 8

struct func {
	uint32_t shndx;
	uint64_t start, cnt; /* instruction units */
	const char *name;
	bool global;
};

struct funcs {
	struct func *v;
	size_t n;
};

static int func_cmp(const void *a, const void *b)
{
	const struct func *x = a, *y = b;
	if (x->shndx != y->shndx)
		return x->shndx < y->shndx ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

static bool is_code_section(const struct ld_section *s)
{
	return s->type == LD_SHT_PROGBITS && (s->flags & LD_SHF_EXECINSTR);
}

static bool is_func_sym(const struct ld_sym *s, const struct ld_section *sec)
{
	if (s->type == LD_STT_FUNC)
		return true;
	/* global labels in code sections (hand-written assembly) */
	return s->type == LD_STT_NOTYPE && s->bind != LD_STB_LOCAL && is_code_section(sec) &&
	       *s->name;
}

/* All functions of all code sections, sorted, with sizes and bounds checked. A function
 * symbol of size 0 extends to the next function or the end of the section. */
static int collect_funcs(struct ld_ctx *c, struct funcs *fs)
{
	const struct ld_elf *e = &c->elf;

	fs->v = calloc(e->nsyms ? e->nsyms : 1, sizeof(*fs->v));
	if (!fs->v)
		return ld_err(c, ENOMEM, "out of memory");
	for (uint32_t i = 0; i < e->nsyms; i++) {
		const struct ld_sym *s = &e->syms[i];
		if (s->shndx == LD_SHN_UNDEF || s->shndx >= e->shnum)
			continue;
		const struct ld_section *sec = &e->secs[s->shndx];
		if (!is_code_section(sec) || !is_func_sym(s, sec))
			continue;
		if (s->value % INSN_SZ || s->size % INSN_SZ || !ld_range_ok(s->value, s->size, sec->size) ||
		    s->value == sec->size)
			return ld_err(c, EINVAL, "symbol %u ('%s'): function [%llu, +%llu) is not "
						 "instruction-aligned inside section %u (%s, %llu bytes)",
				      i, s->name, (unsigned long long)s->value,
				      (unsigned long long)s->size, s->shndx, sec->name,
				      (unsigned long long)sec->size);
		if (strlen(s->name) >= NB_NAME_MAX)
			return ld_err(c, EINVAL, "symbol %u: function name '%.40s...' longer than %d",
				      i, s->name, NB_NAME_MAX - 1);
		fs->v[fs->n++] = (struct func){s->shndx, s->value / INSN_SZ, s->size / INSN_SZ,
					       s->name, s->bind != LD_STB_LOCAL};
	}
	qsort(fs->v, fs->n, sizeof(*fs->v), func_cmp);
	/* aliases of the same address: keep one (the sort is by section, then start) */
	size_t kept = 0;
	for (size_t k = 0; k < fs->n; k++)
		if (!kept || fs->v[kept - 1].shndx != fs->v[k].shndx ||
		    fs->v[kept - 1].start != fs->v[k].start)
			fs->v[kept++] = fs->v[k];
	fs->n = kept;
	for (size_t k = 0; k < fs->n; k++) {
		struct func *f = &fs->v[k];
		uint64_t limit = e->secs[f->shndx].size / INSN_SZ;
		if (k + 1 < fs->n && fs->v[k + 1].shndx == f->shndx)
			limit = fs->v[k + 1].start;
		if (f->cnt == 0)
			f->cnt = limit - f->start;
		if (f->start + f->cnt > limit)
			return ld_err(c, EINVAL, "function '%s' in section %u (%s): [%llu, +%llu) "
						 "overlaps the next function or the section end (insn "
						 "%llu)", f->name, f->shndx, ld_secname(e, f->shndx),
				      (unsigned long long)f->start, (unsigned long long)f->cnt,
				      (unsigned long long)limit);
	}
	return 0;
}

static const struct func *func_at(const struct funcs *fs, uint32_t shndx, uint64_t insn)
{
	/* last function starting at or before (shndx, insn); functions do not overlap */
	size_t lo = 0, hi = fs->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct func *f = &fs->v[mid];
		if (f->shndx < shndx || (f->shndx == shndx && f->start <= insn))
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	const struct func *f = &fs->v[lo - 1];
	return f->shndx == shndx && insn - f->start < f->cnt ? f : NULL;
}

static struct bpf_insn read_insn(const struct ld_section *s, uint64_t idx)
{
	struct bpf_insn in;
	memcpy(&in, s->data + idx * INSN_SZ, sizeof(in));
	return in;
}

static bool is_pseudo_call(const struct bpf_insn *in)
{
	return in->code == (BPF_JMP | BPF_CALL) && in->src_reg == BPF_PSEUDO_CALL;
}

/* Per code section: alignment, types and targets of relocations, before linking. */
static int check_code_relocs(struct ld_ctx *c, uint32_t shndx)
{
	const struct ld_elf *e = &c->elf;
	const struct ld_section *sec = &e->secs[shndx];
	const struct ld_relsec *rs = ld_elf_relocs_for(e, shndx);
	uint64_t n = sec->size / INSN_SZ;

	if (!rs)
		return 0;
	const char *rname = ld_secname(e, rs->relsec);
	for (size_t k = 0; k < rs->cnt; k++) {
		const struct ld_reloc *r = &rs->rels[k];
		if (r->type == LD_R_BPF_NONE)
			continue;
		if (r->offset % INSN_SZ)
			return ld_err(c, EINVAL, "section %u (%s): relocation %u offset %llu is not "
						 "at an instruction boundary", rs->relsec, rname, r->index,
				      (unsigned long long)r->offset);
		if (k && rs->rels[k - 1].offset == r->offset && rs->rels[k - 1].type != LD_R_BPF_NONE)
			return ld_err(c, EINVAL, "section %u (%s): two relocations at offset %llu",
				      rs->relsec, rname, (unsigned long long)r->offset);
		uint64_t idx = r->offset / INSN_SZ;
		struct bpf_insn in = read_insn(sec, idx);
		if (r->type == LD_R_BPF_64_64) {
			if (!isa_is_lddw(&in))
				return ld_err(c, EINVAL, "section %u (%s): relocation %u (R_BPF_64_64 "
							 "against '%s') at insn %llu of %s: "
							 "instruction 0x%02x is not LDDW",
					      rs->relsec, rname, r->index, e->syms[r->sym].name,
					      (unsigned long long)idx, sec->name, in.code);
			if (idx + 1 >= n)
				return ld_err(c, EINVAL, "section %u (%s): relocation %u: LDDW at insn "
							 "%llu of %s is truncated (no second slot)",
					      rs->relsec, rname, r->index, (unsigned long long)idx,
					      sec->name);
		} else if (r->type == LD_R_BPF_64_32) {
			if (!is_pseudo_call(&in))
				return ld_err(c, EINVAL, "section %u (%s): relocation %u (R_BPF_64_32 "
							 "against '%s') at insn %llu of %s: not a "
							 "bpf-to-bpf call (code 0x%02x src %u)",
					      rs->relsec, rname, r->index, e->syms[r->sym].name,
					      (unsigned long long)idx, sec->name, in.code,
					      in.src_reg);
		} else {
			return ld_err(c, ENOTSUP, "section %u (%s): relocation %u at insn %llu has "
						  "unsupported type %u (only R_BPF_64_64 on LDDW and "
						  "R_BPF_64_32 on calls)", rs->relsec, rname, r->index,
				      (unsigned long long)idx, r->type);
		}
	}
	return 0;
}

static const struct ld_reloc *reloc_at(const struct ld_relsec *rs, uint64_t offset)
{
	if (!rs)
		return NULL;
	size_t lo = 0, hi = rs->cnt;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rs->rels[mid].offset < offset)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < rs->cnt && rs->rels[lo].offset == offset; lo++)
		if (rs->rels[lo].type != LD_R_BPF_NONE)
			return &rs->rels[lo];
	return NULL;
}

struct linker {
	struct ld_ctx *c;
	const struct funcs *fs;
	struct bpf_insn *insns;
	size_t cnt, cap;
	struct ld_segment *segs;
	size_t nsegs, segcap;
	const char *prog;
};

static int append_segment(struct linker *l, const struct func *f)
{
	const struct ld_section *sec = &l->c->elf.secs[f->shndx];

	if (f->cnt > LD_MAX_PROG_INSNS || l->cnt + f->cnt > LD_MAX_PROG_INSNS)
		return ld_err(l->c, E2BIG, "program '%s': more than %u instructions after linking",
			      l->prog, LD_MAX_PROG_INSNS);
	if (l->cnt + f->cnt > l->cap) {
		size_t cap = l->cap ? l->cap : 64;
		while (cap < l->cnt + f->cnt)
			cap *= 2;
		struct bpf_insn *n = realloc(l->insns, cap * sizeof(*n));
		if (!n)
			return ld_err(l->c, ENOMEM, "out of memory");
		l->insns = n;
		l->cap = cap;
	}
	if (l->nsegs == l->segcap) {
		size_t cap = l->segcap ? l->segcap * 2 : 8;
		struct ld_segment *n = realloc(l->segs, cap * sizeof(*n));
		if (!n)
			return ld_err(l->c, ENOMEM, "out of memory");
		l->segs = n;
		l->segcap = cap;
	}
	memcpy(l->insns + l->cnt, sec->data + f->start * INSN_SZ, f->cnt * INSN_SZ);
	l->segs[l->nsegs++] = (struct ld_segment){f->shndx, f->start, f->cnt, l->cnt, f->name};
	l->cnt += f->cnt;
	return 0;
}

/* Linked position of (shndx, insn), appending the .text function that starts there. */
static int call_target_pos(struct linker *l, uint32_t shndx, int64_t target, size_t at,
			   size_t *pos)
{
	struct ld_ctx *c = l->c;
	int text = ld_elf_find_section(&c->elf, ".text");

	for (size_t k = 0; k < l->nsegs; k++) {
		const struct ld_segment *s = &l->segs[k];
		if (s->shndx == shndx && target >= 0 && (uint64_t)target >= s->start &&
		    (uint64_t)target - s->start < s->cnt) {
			if ((uint64_t)target != s->start)
				break; /* into the middle of a function: rejected below */
			*pos = s->pos;
			return 0;
		}
	}
	const struct func *f = target >= 0 ? func_at(l->fs, shndx, (uint64_t)target) : NULL;
	if (!f || (int)shndx != text || f->start != (uint64_t)target)
		return ld_err(c, EINVAL, "program '%s' insn %zu: call target insn %lld of section "
					 "%u (%s) is not the start of a .text function", l->prog,
			      at, (long long)target, shndx, ld_secname(&c->elf, shndx));
	*pos = l->cnt;
	return append_segment(l, f);
}

static int link_call(struct linker *l, const struct ld_segment *seg, uint64_t j, size_t i)
{
	struct ld_ctx *c = l->c;
	const struct ld_elf *e = &c->elf;
	struct bpf_insn *in = &l->insns[i];
	const struct ld_reloc *r = reloc_at(ld_elf_relocs_for(e, seg->shndx),
					    (seg->start + j) * INSN_SZ);
	uint32_t tshndx = seg->shndx;
	int64_t target;

	if (r) {
		const struct ld_sym *s = &e->syms[r->sym];
		int text = ld_elf_find_section(e, ".text");
		if (s->shndx == LD_SHN_UNDEF && (c->flags & NB_LOADER_INSPECT)) {
			in->imm = -1; /* as emitted: stays inside the program */
			return ld_add_extern(c, s->name, true);
		}
		if (s->shndx == LD_SHN_UNDEF)
			return ld_err(c, ENOTSUP, "program '%s' insn %zu: call to undefined (extern) "
						  "function '%s' is not supported", l->prog, i, s->name);
		if ((int)s->shndx != text || text < 0)
			return ld_err(c, EINVAL, "program '%s' insn %zu: call relocation against "
						 "symbol '%s' in section %u (%s); only .text functions "
						 "can be called", l->prog, i, s->name, s->shndx,
				      s->shndx < e->shnum ? ld_secname(e, s->shndx) : "special");
		if (s->value % INSN_SZ || r->addend % INSN_SZ)
			return ld_err(c, EINVAL, "program '%s' insn %zu: call relocation against '%s' "
						 "is not instruction-aligned", l->prog, i, s->name);
		tshndx = (uint32_t)text;
		target = (int64_t)(s->value / INSN_SZ) + r->addend / INSN_SZ + (int64_t)in->imm + 1;
	} else {
		target = (int64_t)(seg->start + j) + (int64_t)in->imm + 1;
	}
	size_t pos = 0;
	int ret = call_target_pos(l, tshndx, target, i, &pos);
	if (ret)
		return ret;
	in = &l->insns[i]; /* append may have moved the buffer */
	in->imm = (int32_t)((int64_t)pos - (int64_t)i - 1);
	return 0;
}

static int link_lddw(struct linker *l, const struct ld_segment *seg, uint64_t j, size_t i)
{
	struct ld_ctx *c = l->c;
	const struct ld_elf *e = &c->elf;
	struct bpf_insn *in = &l->insns[i];

	if (j + 1 >= seg->cnt)
		return ld_err(c, EINVAL, "program '%s' insn %zu: LDDW truncated at the end of "
					 "function '%s'", l->prog, i, seg->name);
	const struct ld_reloc *r = reloc_at(ld_elf_relocs_for(e, seg->shndx),
					    (seg->start + j) * INSN_SZ);
	if (!r) {
		if (in->src_reg != 0)
			return ld_err(c, EINVAL, "program '%s' insn %zu: LDDW with src_reg %u but no "
						 "relocation", l->prog, i, in->src_reg);
		return 0;
	}
	const struct ld_sym *s = &e->syms[r->sym];
	if (s->shndx == LD_SHN_UNDEF && (c->flags & NB_LOADER_INSPECT)) {
		in->src_reg = 0; /* a plain constant, never a map reference */
		return ld_add_extern(c, s->name, false);
	}
	if (s->shndx == LD_SHN_UNDEF)
		return ld_err(c, ENOTSUP, "program '%s' insn %zu: relocation against undefined "
					  "(extern) symbol '%s' is not supported", l->prog, i, s->name);
	if (s->shndx >= e->shnum)
		return ld_err(c, ENOTSUP, "program '%s' insn %zu: relocation against symbol '%s' in "
					  "special section 0x%x is not supported", l->prog, i,
			      s->name, s->shndx);
	const struct ld_section *ts = &e->secs[s->shndx];
	if (ts->flags & LD_SHF_EXECINSTR) {
		/* a callback's address (bpf_loop): like libbpf, the byte offset is the symbol's
		 * value plus the imm clang leaves in the instruction; the function is appended
		 * like a call target and the LDDW becomes BPF_PSEUDO_FUNC with a relative imm */
		uint64_t boff = s->value + (uint64_t)(int64_t)in->imm + (uint64_t)r->addend;
		if (boff % INSN_SZ || in[1].imm)
			return ld_err(c, EINVAL, "program '%s' insn %zu: function address of '%s' is "
						 "not instruction-aligned", l->prog, i, s->name);
		if ((int)s->shndx != ld_elf_find_section(e, ".text"))
			return ld_err(c, EINVAL, "program '%s' insn %zu: function address of '%s' in "
						 "section %u (%s) is not the start of a .text function",
				      l->prog, i, s->name, s->shndx, ts->name);
		size_t pos = 0;
		int ret = call_target_pos(l, s->shndx, (int64_t)(boff / INSN_SZ), i, &pos);
		if (ret)
			return ret;
		in = &l->insns[i]; /* append may have moved the buffer */
		in->src_reg = BPF_PSEUDO_FUNC;
		in->imm = (int32_t)((int64_t)pos - (int64_t)i - 1);
		in[1].imm = 0;
		return 0;
	}
	bool gd = false;
	uint64_t def_off = s->value + (s->type == LD_STT_SECTION ? (uint64_t)(int64_t)in->imm : 0);
	int idx = ld_map_at(c, s->shndx, def_off, &gd);
	if (idx < 0)
		return ld_err(c, EINVAL, "program '%s' insn %zu: relocation against symbol '%s' in "
					 "section %u (%s), which is neither a map definition nor "
					 "global data", l->prog, i, s->name, s->shndx, ts->name);
	if (gd) {
		/* wrapping unsigned sum: a negative result becomes huge and is rejected */
		uint64_t off = s->value + (uint64_t)(int64_t)in->imm + (uint64_t)r->addend;
		if (off > ts->size)
			return ld_err(c, EINVAL, "program '%s' insn %zu: offset %lld into '%s' is "
						 "outside the section (%llu bytes)", l->prog, i,
				      (long long)off, ts->name, (unsigned long long)ts->size);
		in->src_reg = BPF_PSEUDO_MAP_VALUE;
		in->imm = idx;
		in[1].imm = (int32_t)off;
	} else {
		in->src_reg = BPF_PSEUDO_MAP_FD;
		in->imm = idx;
		in[1].imm = 0;
	}
	return 0;
}

static int link_program(struct ld_ctx *c, const struct funcs *fs, const struct func *entry,
			struct nb_program *p)
{
	struct linker l = {.c = c, .fs = fs, .prog = entry->name};
	int ret = append_segment(&l, entry);

	/* segments grow while we walk them: each appended function is linked in turn */
	for (size_t k = 0; !ret && k < l.nsegs; k++) {
		struct ld_segment seg = l.segs[k];
		for (uint64_t j = 0; !ret && j < seg.cnt; j++) {
			size_t i = seg.pos + j;
			struct bpf_insn *in = &l.insns[i];
			if (is_pseudo_call(in)) {
				ret = link_call(&l, &seg, j, i);
			} else if (isa_is_lddw(in)) {
				ret = link_lddw(&l, &seg, j, i);
				j++;
			}
		}
	}
	if (!ret) {
		p->insns = l.insns;
		p->insn_cnt = l.cnt;
		p->main_insn_cnt = entry->cnt;
		l.insns = NULL;
		ret = ld_program_debug_info(c, p, l.segs, l.nsegs);
	}
	free(l.insns);
	free(l.segs);
	return ret;
}

static int add_program(struct ld_ctx *c, const struct funcs *fs, const struct func *f)
{
	struct nb_object *o = c->obj;
	const char *sname = ld_secname(&c->elf, f->shndx);

	if (strlen(sname) >= sizeof(o->progs[0].section))
		return ld_err(c, EINVAL, "section %u: name '%.40s...' is too long", f->shndx, sname);
	struct nb_program *n = realloc(o->progs, (o->prog_cnt + 1) * sizeof(*n));
	if (!n)
		return ld_err(c, ENOMEM, "out of memory");
	o->progs = n;
	struct nb_program *p = &o->progs[o->prog_cnt++];
	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", f->name);
	snprintf(p->section, sizeof(p->section), "%s", sname);
	return link_program(c, fs, f, p);
}

int ld_collect_programs(struct ld_ctx *c)
{
	const struct ld_elf *e = &c->elf;
	struct funcs fs = {0};
	int text = ld_elf_find_section(e, ".text");
	int ret;

	for (uint32_t i = 1; i < e->shnum; i++) {
		const struct ld_section *s = &e->secs[i];
		if (!is_code_section(s))
			continue;
		if (s->size % INSN_SZ)
			return ld_err(c, EINVAL, "section %u (%s): size %llu is not a multiple of the "
						 "instruction size", i, s->name,
				      (unsigned long long)s->size);
		ret = check_code_relocs(c, i);
		if (ret)
			return ret;
	}
	ret = collect_funcs(c, &fs);
	if (ret)
		goto out;
	/* a code section without function symbols is one program named after the section */
	struct func *extra = NULL;
	size_t nextra = 0;
	for (uint32_t i = 1; i < e->shnum; i++) {
		const struct ld_section *s = &e->secs[i];
		if (!is_code_section(s) || (int)i == text || s->size == 0)
			continue;
		bool any = false;
		for (size_t k = 0; k < fs.n; k++)
			any |= fs.v[k].shndx == i;
		if (any)
			continue;
		if (strlen(s->name) >= NB_NAME_MAX) {
			free(extra);
			ret = ld_err(c, EINVAL, "section %u: name '%.40s...' is too long", i, s->name);
			goto out;
		}
		struct func *x = realloc(extra, (nextra + 1) * sizeof(*x));
		if (!x) {
			free(extra);
			ret = ld_err(c, ENOMEM, "out of memory");
			goto out;
		}
		extra = x;
		extra[nextra++] = (struct func){i, 0, s->size / INSN_SZ, s->name, true};
	}
	if (nextra) {
		struct func *x = realloc(fs.v, (fs.n + nextra) * sizeof(*x));
		if (!x) {
			free(extra);
			ret = ld_err(c, ENOMEM, "out of memory");
			goto out;
		}
		fs.v = x;
		memcpy(fs.v + fs.n, extra, nextra * sizeof(*extra));
		fs.n += nextra;
		qsort(fs.v, fs.n, sizeof(*fs.v), func_cmp);
	}
	free(extra);
	size_t non_text = 0;
	for (size_t k = 0; k < fs.n; k++)
		non_text += (int)fs.v[k].shndx != text;
	for (size_t k = 0; k < fs.n && !ret; k++) {
		const struct func *f = &fs.v[k];
		/* objects whose only code is .text (e.g. conformance ELFs): its global
		 * functions are the programs */
		bool prog = (int)f->shndx != text || (non_text == 0 && f->global);
		if (prog)
			ret = add_program(c, &fs, f);
	}
out:
	free(fs.v);
	return ret;
}

/* ELF64 little-endian reader for BPF relocatable objects. Every field read from the file
 * is bounds-checked with overflow-safe arithmetic before use; struct layouts are decoded
 * byte by byte (no casts onto the buffer, so alignment never matters). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_internal.h"

#define EHDR_SIZE 64
#define SHDR_SIZE 64
#define SYM_SIZE 24
#define REL_SIZE 16
#define RELA_SIZE 24

int ld_err(struct ld_ctx *c, int code, const char *fmt, ...)
{
	if (c->err && c->errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->err, c->errlen, fmt, ap);
		va_end(ap);
		/* a stable code like the verifier's, so scripts can match loader errors too */
		size_t n = strlen(c->err);
		if (code != ENOMEM && code != ENOENT && n + 1 < c->errlen)
			snprintf(c->err + n, c->errlen - n, " [E-LOAD]");
	}
	return -code;
}

const char *ld_secname(const struct ld_elf *e, uint32_t idx)
{
	if (!e->secs || idx >= e->shnum || !e->secs[idx].name)
		return "?";
	return e->secs[idx].name;
}

/* Validates that a NUL-terminated string starts at off inside a string section. */
static const char *str_at(const struct ld_section *s, uint64_t off)
{
	if (!s->data || off >= s->size)
		return NULL;
	const char *p = (const char *)s->data + off;
	if (!memchr(p, '\0', s->size - off))
		return NULL;
	return p;
}

static int parse_header(struct ld_ctx *c, uint64_t *shoff, uint32_t *shnum, uint32_t *shstrndx)
{
	const uint8_t *b = c->elf.buf;
	size_t size = c->elf.size;

	/* Not an ELF at all (a text file, a wrong path) says so first, whatever its length. */
	if (size < 4 || b[0] != 0x7f || b[1] != 'E' || b[2] != 'L' || b[3] != 'F') {
		if (size == 0)
			return ld_err(c, EINVAL, "not an ELF file (empty)");
		if (size < 4)
			return ld_err(c, EINVAL, "not an ELF file (%zu bytes)", size);
		return ld_err(c, EINVAL, "not an ELF file (bad ELF magic %02x %02x %02x %02x, "
					 "expected 7f 45 4c 46)", b[0], b[1], b[2], b[3]);
	}
	if (size < EHDR_SIZE)
		return ld_err(c, EINVAL, "ELF header truncated: file is %zu bytes, header needs %d",
			      size, EHDR_SIZE);
	if (b[4] != 2)
		return ld_err(c, EINVAL, "ELF class %u is not ELFCLASS64 (2)", b[4]);
	if (b[5] != 1)
		return ld_err(c, EINVAL, "ELF data encoding %u is not little-endian (1)", b[5]);
	if (b[6] != 1)
		return ld_err(c, EINVAL, "ELF ident version %u is not 1", b[6]);
	uint16_t type = ld_rd16(b + 16), machine = ld_rd16(b + 18);
	/* LLVM before 3.9-ish wrote e_machine 0 (EM_NONE) for BPF; libbpf accepts it too. */
	if (machine != LD_EM_BPF && machine != 0)
		return ld_err(c, EINVAL, "ELF machine %u is not EM_BPF (247)", machine);
	if (type != LD_ET_REL)
		return ld_err(c, EINVAL, "ELF type %u is not a relocatable object (ET_REL = 1)", type);
	uint16_t ehsize = ld_rd16(b + 52);
	if (ehsize < EHDR_SIZE)
		return ld_err(c, EINVAL, "ELF header size %u is smaller than %d", ehsize, EHDR_SIZE);
	*shoff = ld_rd64(b + 40);
	uint16_t shentsize = ld_rd16(b + 58);
	*shnum = ld_rd16(b + 60);
	*shstrndx = ld_rd16(b + 62);
	if (*shnum == 0)
		return ld_err(c, EINVAL, "ELF has no section headers (e_shnum 0; extended "
					 "section numbering is not supported)");
	if (shentsize != SHDR_SIZE)
		return ld_err(c, EINVAL, "section header entry size %u is not %d", shentsize,
			      SHDR_SIZE);
	if (!ld_range_ok(*shoff, (uint64_t)*shnum * SHDR_SIZE, size))
		return ld_err(c, EINVAL,
			      "section header table (offset %llu, %u entries of %d bytes) extends "
			      "past end of file (%zu bytes)",
			      (unsigned long long)*shoff, *shnum, SHDR_SIZE, size);
	if (*shstrndx == LD_SHN_XINDEX)
		return ld_err(c, EINVAL, "extended section string table index is not supported");
	if (*shstrndx >= *shnum)
		return ld_err(c, EINVAL, "section name string table index %u out of range (%u "
					 "sections)", *shstrndx, *shnum);
	return 0;
}

struct span {
	uint64_t start, end;
	uint32_t idx; /* section index; UINT32_MAX = ELF header, UINT32_MAX-1 = shdr table */
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static const char *span_name(const struct ld_elf *e, uint32_t idx, char *buf, size_t len)
{
	if (idx == UINT32_MAX)
		snprintf(buf, len, "the ELF header");
	else if (idx == UINT32_MAX - 1)
		snprintf(buf, len, "the section header table");
	else
		snprintf(buf, len, "section %u (%s)", idx, ld_secname(e, idx));
	return buf;
}

/* File-backed sections must not overlap each other, the ELF header or the header table. */
static int check_overlaps(struct ld_ctx *c, uint64_t shoff)
{
	struct ld_elf *e = &c->elf;
	struct span *sp = calloc((size_t)e->shnum + 2, sizeof(*sp));
	size_t n = 0;
	int ret = 0;

	if (!sp)
		return ld_err(c, ENOMEM, "out of memory");
	sp[n++] = (struct span){0, EHDR_SIZE, UINT32_MAX};
	sp[n++] = (struct span){shoff, shoff + (uint64_t)e->shnum * SHDR_SIZE, UINT32_MAX - 1};
	for (uint32_t i = 1; i < e->shnum; i++) {
		const struct ld_section *s = &e->secs[i];
		if (s->type == LD_SHT_NOBITS || s->type == LD_SHT_NULL || s->size == 0)
			continue;
		sp[n++] = (struct span){s->offset, s->offset + s->size, i};
	}
	qsort(sp, n, sizeof(*sp), span_cmp);
	for (size_t i = 1; i < n; i++) {
		if (sp[i].start < sp[i - 1].end) {
			char a[96], b[96];
			ret = ld_err(c, EINVAL, "%s [0x%llx, 0x%llx) overlaps %s [0x%llx, 0x%llx)",
				     span_name(e, sp[i].idx, a, sizeof(a)),
				     (unsigned long long)sp[i].start, (unsigned long long)sp[i].end,
				     span_name(e, sp[i - 1].idx, b, sizeof(b)),
				     (unsigned long long)sp[i - 1].start,
				     (unsigned long long)sp[i - 1].end);
			break;
		}
	}
	free(sp);
	return ret;
}

static int parse_sections(struct ld_ctx *c, uint64_t shoff, uint32_t shstrndx)
{
	struct ld_elf *e = &c->elf;

	e->secs = calloc(e->shnum, sizeof(*e->secs));
	if (!e->secs)
		return ld_err(c, ENOMEM, "out of memory for %u section headers", e->shnum);
	for (uint32_t i = 0; i < e->shnum; i++) {
		const uint8_t *h = e->buf + shoff + (uint64_t)i * SHDR_SIZE;
		struct ld_section *s = &e->secs[i];
		s->type = ld_rd32(h + 4);
		s->flags = ld_rd64(h + 8);
		s->offset = ld_rd64(h + 24);
		s->size = ld_rd64(h + 32);
		s->link = ld_rd32(h + 40);
		s->info = ld_rd32(h + 44);
		s->entsize = ld_rd64(h + 56);
		if (s->type != LD_SHT_NOBITS && s->type != LD_SHT_NULL) {
			if (!ld_range_ok(s->offset, s->size, e->size))
				return ld_err(c, EINVAL,
					      "section %u: offset %llu + size %llu extends past end "
					      "of file (%zu bytes)",
					      i, (unsigned long long)s->offset,
					      (unsigned long long)s->size, e->size);
			s->data = e->buf + s->offset;
		}
	}
	const struct ld_section *shstr = &e->secs[shstrndx];
	if (shstr->type != LD_SHT_STRTAB)
		return ld_err(c, EINVAL, "section name string table (section %u) has type %u, "
					 "not SHT_STRTAB", shstrndx, shstr->type);
	for (uint32_t i = 0; i < e->shnum; i++) {
		const uint8_t *h = e->buf + shoff + (uint64_t)i * SHDR_SIZE;
		uint32_t name_off = ld_rd32(h);
		e->secs[i].name = str_at(shstr, name_off);
		if (!e->secs[i].name)
			return ld_err(c, EINVAL,
				      "section %u: name offset %u out of range of the section name "
				      "string table (%llu bytes) or not NUL-terminated",
				      i, name_off, (unsigned long long)shstr->size);
	}
	return check_overlaps(c, shoff);
}

static int parse_symbols(struct ld_ctx *c)
{
	struct ld_elf *e = &c->elf;

	for (uint32_t i = 1; i < e->shnum; i++) {
		if (e->secs[i].type != LD_SHT_SYMTAB)
			continue;
		if (e->symtab_idx)
			return ld_err(c, EINVAL, "section %u (%s): second symbol table (first is "
						 "section %u)", i, e->secs[i].name, e->symtab_idx);
		e->symtab_idx = i;
	}
	if (!e->symtab_idx)
		return 0; /* no symbols: only possible for objects without programs */
	uint32_t si = e->symtab_idx;
	const struct ld_section *st = &e->secs[si];
	if (st->entsize != SYM_SIZE)
		return ld_err(c, EINVAL, "section %u (%s): symbol entry size %llu is not %d", si,
			      st->name, (unsigned long long)st->entsize, SYM_SIZE);
	if (st->size % SYM_SIZE)
		return ld_err(c, EINVAL, "section %u (%s): size %llu is not a multiple of %d", si,
			      st->name, (unsigned long long)st->size, SYM_SIZE);
	if (st->link == 0 || st->link >= e->shnum || e->secs[st->link].type != LD_SHT_STRTAB)
		return ld_err(c, EINVAL, "section %u (%s): string table link %u is not a string "
					 "table section (%u sections)", si, st->name, st->link, e->shnum);
	if (st->size / SYM_SIZE > UINT32_MAX)
		return ld_err(c, EINVAL, "section %u (%s): too many symbols", si, st->name);
	const struct ld_section *strs = &e->secs[st->link];
	e->nsyms = (uint32_t)(st->size / SYM_SIZE);
	e->syms = calloc(e->nsyms ? e->nsyms : 1, sizeof(*e->syms));
	if (!e->syms)
		return ld_err(c, ENOMEM, "out of memory for %u symbols", e->nsyms);
	for (uint32_t i = 0; i < e->nsyms; i++) {
		const uint8_t *p = st->data + (uint64_t)i * SYM_SIZE;
		struct ld_sym *s = &e->syms[i];
		uint32_t name_off = ld_rd32(p);
		s->type = p[4] & 0xf;
		s->bind = p[4] >> 4;
		s->shndx = ld_rd16(p + 6);
		s->value = ld_rd64(p + 8);
		s->size = ld_rd64(p + 16);
		s->name = str_at(strs, name_off);
		if (!s->name)
			return ld_err(c, EINVAL,
				      "section %u (%s): symbol %u name offset %u out of range of "
				      "string table section %u (%llu bytes)",
				      si, st->name, i, name_off, st->link,
				      (unsigned long long)strs->size);
		if (s->shndx != LD_SHN_UNDEF && s->shndx < LD_SHN_LORESERVE && s->shndx >= e->shnum)
			return ld_err(c, EINVAL,
				      "section %u (%s): symbol %u ('%s') section index %u out of "
				      "range (%u sections)",
				      si, st->name, i, s->name, s->shndx, e->shnum);
		if (s->type == LD_STT_SECTION && s->shndx < e->shnum)
			s->name = e->secs[s->shndx].name;
	}
	return 0;
}

static int rel_cmp(const void *a, const void *b)
{
	const struct ld_reloc *x = a, *y = b;
	if (x->offset != y->offset)
		return x->offset < y->offset ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index; /* stable */
}

static int parse_relocs(struct ld_ctx *c)
{
	struct ld_elf *e = &c->elf;
	size_t n = 0;

	for (uint32_t i = 1; i < e->shnum; i++)
		if (e->secs[i].type == LD_SHT_REL || e->secs[i].type == LD_SHT_RELA)
			n++;
	if (!n)
		return 0;
	e->relsecs = calloc(n, sizeof(*e->relsecs));
	if (!e->relsecs)
		return ld_err(c, ENOMEM, "out of memory");
	for (uint32_t i = 1; i < e->shnum; i++) {
		const struct ld_section *s = &e->secs[i];
		if (s->type != LD_SHT_REL && s->type != LD_SHT_RELA)
			continue;
		bool rela = s->type == LD_SHT_RELA;
		uint64_t esz = rela ? RELA_SIZE : REL_SIZE;
		if (s->entsize != esz)
			return ld_err(c, EINVAL, "section %u (%s): relocation entry size %llu is not "
						 "%llu", i, s->name, (unsigned long long)s->entsize,
				      (unsigned long long)esz);
		if (s->size % esz)
			return ld_err(c, EINVAL, "section %u (%s): size %llu is not a multiple of %llu",
				      i, s->name, (unsigned long long)s->size, (unsigned long long)esz);
		if (!e->symtab_idx || s->link != e->symtab_idx)
			return ld_err(c, EINVAL, "section %u (%s): symbol table link %u is not the "
						 "symbol table (section %u)", i, s->name, s->link,
				      e->symtab_idx);
		if (s->info == 0 || s->info >= e->shnum)
			return ld_err(c, EINVAL, "section %u (%s): target section index %u out of "
						 "range (%u sections)", i, s->name, s->info, e->shnum);
		for (size_t k = 0; k < e->relsec_cnt; k++)
			if (e->relsecs[k].target == s->info)
				return ld_err(c, EINVAL, "section %u (%s): second relocation section "
							 "for section %u (%s)", i, s->name, s->info,
					      ld_secname(e, s->info));
		const struct ld_section *tgt = &e->secs[s->info];
		struct ld_relsec *rs = &e->relsecs[e->relsec_cnt++];
		rs->target = s->info;
		rs->relsec = i;
		rs->cnt = s->size / esz;
		rs->rels = calloc(rs->cnt ? rs->cnt : 1, sizeof(*rs->rels));
		if (!rs->rels)
			return ld_err(c, ENOMEM, "out of memory for %zu relocations", rs->cnt);
		for (size_t k = 0; k < rs->cnt; k++) {
			const uint8_t *p = s->data + k * esz;
			struct ld_reloc *r = &rs->rels[k];
			uint64_t info = ld_rd64(p + 8);
			r->offset = ld_rd64(p);
			r->sym = (uint32_t)(info >> 32);
			r->type = (uint32_t)info;
			r->addend = rela ? (int64_t)ld_rd64(p + 16) : 0;
			r->index = (uint32_t)k;
			if (r->sym >= e->nsyms)
				return ld_err(c, EINVAL, "section %u (%s): relocation %zu symbol index "
							 "%u out of range (%u symbols)", i, s->name, k,
					      r->sym, e->nsyms);
			if (r->offset >= tgt->size)
				return ld_err(c, EINVAL, "section %u (%s): relocation %zu offset %llu "
							 "outside section %u (%s) of %llu bytes", i,
					      s->name, k, (unsigned long long)r->offset, s->info,
					      tgt->name, (unsigned long long)tgt->size);
		}
		bool sorted = true; /* compilers emit them in order: skip the sort then */
		for (size_t k = 1; k < rs->cnt && sorted; k++)
			sorted = rs->rels[k - 1].offset <= rs->rels[k].offset;
		if (!sorted)
			qsort(rs->rels, rs->cnt, sizeof(*rs->rels), rel_cmp);
	}
	return 0;
}

int ld_elf_parse(struct ld_ctx *c, const uint8_t *buf, size_t size)
{
	uint64_t shoff = 0;
	uint32_t shnum = 0, shstrndx = 0;
	int ret;

	c->elf.buf = buf;
	c->elf.size = size;
	ret = parse_header(c, &shoff, &shnum, &shstrndx);
	if (ret)
		return ret;
	c->elf.shnum = shnum;
	ret = parse_sections(c, shoff, shstrndx);
	if (ret)
		return ret;
	ret = parse_symbols(c);
	if (ret)
		return ret;
	return parse_relocs(c);
}

void ld_elf_free(struct ld_elf *e)
{
	for (size_t i = 0; i < e->relsec_cnt; i++)
		free(e->relsecs[i].rels);
	free(e->relsecs);
	free(e->syms);
	free(e->secs);
	memset(e, 0, sizeof(*e));
}

int ld_elf_find_section(const struct ld_elf *e, const char *name)
{
	for (uint32_t i = 1; i < e->shnum; i++)
		if (strcmp(e->secs[i].name, name) == 0)
			return (int)i;
	return -1;
}

const struct ld_relsec *ld_elf_relocs_for(const struct ld_elf *e, uint32_t idx)
{
	for (size_t i = 0; i < e->relsec_cnt; i++)
		if (e->relsecs[i].target == idx)
			return &e->relsecs[i];
	return NULL;
}

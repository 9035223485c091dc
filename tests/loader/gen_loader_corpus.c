/* Generates tests/loader/corpus/: broken objects made by mutating real clang output
 * (build/tests/progs/loader_*.bpf.o), one defect each, plus expected.txt with the part of
 * the error message each must produce. Run once by hand; the output is checked in:
 *   build/tests/loader/gen_loader_corpus build/tests/progs tests/loader/corpus */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader/loader_internal.h"

struct obj {
	uint8_t *buf;
	size_t size;
	struct ld_ctx c; /* parsed original: section/symbol/BTF positions */
	uint64_t shoff;
};

static FILE *manifest;
static const char *outdir;
static int written;

static void load(struct obj *o, const char *dir, const char *name)
{
	char path[1024], err[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "rb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fseek(f, 0, SEEK_END);
	o->size = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	o->buf = malloc(o->size);
	if (fread(o->buf, 1, o->size, f) != o->size)
		exit(1);
	fclose(f);
	memset(&o->c, 0, sizeof(o->c));
	o->c.err = err;
	o->c.errlen = sizeof(err);
	if (ld_elf_parse(&o->c, o->buf, o->size)) {
		fprintf(stderr, "%s: %s\n", path, err);
		exit(1);
	}
	int b = ld_elf_find_section(&o->c.elf, ".BTF");
	if (b > 0 && ld_btf_parse(&o->c, o->c.elf.secs[b].data, o->c.elf.secs[b].size)) {
		fprintf(stderr, "%s: %s\n", path, err);
		exit(1);
	}
	o->shoff = ld_rd64(o->buf + 40);
}

static uint8_t *copy(const struct obj *o)
{
	uint8_t *p = malloc(o->size);
	memcpy(p, o->buf, o->size);
	return p;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }

static void emit(const char *name, const uint8_t *buf, size_t size, const char *expect)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(buf, 1, size, f) != size) {
		perror(path);
		exit(1);
	}
	fclose(f);
	fprintf(manifest, "%s\t%s\n", name, expect);
	written++;
}

static int sec(const struct obj *o, const char *name)
{
	int i = ld_elf_find_section(&o->c.elf, name);
	if (i < 0) {
		fprintf(stderr, "no section %s\n", name);
		exit(1);
	}
	return i;
}

static uint8_t *shdr(const struct obj *o, uint8_t *buf, int idx)
{
	return buf + o->shoff + (uint64_t)idx * 64;
}

static int sym(const struct obj *o, const char *name)
{
	for (uint32_t i = 0; i < o->c.elf.nsyms; i++)
		if (strcmp(o->c.elf.syms[i].name, name) == 0 && o->c.elf.syms[i].type != LD_STT_SECTION)
			return (int)i;
	fprintf(stderr, "no symbol %s\n", name);
	exit(1);
}

static uint8_t *symp(const struct obj *o, uint8_t *buf, int idx)
{
	const struct ld_section *st = &o->c.elf.secs[o->c.elf.symtab_idx];
	return buf + st->offset + (uint64_t)idx * 24;
}

/* k-th relocation entry (file order) of the REL section named rel */
static uint8_t *relp(const struct obj *o, uint8_t *buf, const char *rel, int k)
{
	return buf + o->c.elf.secs[sec(o, rel)].offset + (uint64_t)k * 16;
}

/* file position of BTF type id's 12-byte header */
static uint8_t *btf_type_hdr(const struct obj *o, uint8_t *buf, uint32_t id)
{
	return buf + (o->c.btf.types[id].extra - 12 - o->buf);
}

static uint32_t btf_find(const struct obj *o, uint32_t kind, const char *name)
{
	for (uint32_t id = 1; id < o->c.btf.nr_types; id++) {
		const struct ld_btf_type *t = &o->c.btf.types[id];
		const char *n = ld_btf_str(&o->c.btf, t->name_off);
		if (t->kind == kind && (!name || (n && strcmp(n, name) == 0)))
			return id;
	}
	fprintf(stderr, "no BTF type kind %u %s\n", kind, name ? name : "");
	exit(1);
}

static void elf_header_cases(const struct obj *o)
{
	uint8_t *b;
	emit("truncated_header.o", o->buf, 40, "ELF header truncated");
	b = copy(o); b[1] = 'X'; emit("bad_magic.o", b, o->size, "bad ELF magic"); free(b);
	b = copy(o); b[4] = 1; emit("class32.o", b, o->size, "not ELFCLASS64"); free(b);
	b = copy(o); b[5] = 2; emit("big_endian.o", b, o->size, "not little-endian"); free(b);
	b = copy(o); put16(b + 18, 62); emit("machine_x86.o", b, o->size, "machine 62 is not EM_BPF"); free(b);
	b = copy(o); put16(b + 16, 2); emit("not_relocatable.o", b, o->size, "not a relocatable object"); free(b);
	b = copy(o); put64(b + 40, o->size - 10);
	emit("shoff_past_eof.o", b, o->size, "section header table"); free(b);
	b = copy(o); put16(b + 62, (uint16_t)(o->c.elf.shnum + 5));
	emit("shstrndx_range.o", b, o->size, "section name string table index"); free(b);
	b = copy(o); put16(b + 58, 40); emit("shentsize.o", b, o->size, "section header entry size 40"); free(b);
	b = copy(o); put16(b + 60, 0); emit("no_sections.o", b, o->size, "no section headers"); free(b);
	/* the section header table cut off */
	emit("truncated_shdrs.o", o->buf, o->shoff + 100, "extends past end of file");
}

static void section_cases(const struct obj *o)
{
	uint8_t *b;
	int text = sec(o, ".text"), tuner = sec(o, "tuner"), st = (int)o->c.elf.symtab_idx;
	b = copy(o); put64(shdr(o, b, text) + 24, o->size);
	emit("section_offset_eof.o", b, o->size, "extends past end of file"); free(b);
	b = copy(o); put64(shdr(o, b, tuner) + 32, 0xfffffffffffff000ull);
	emit("section_size_huge.o", b, o->size, "extends past end of file"); free(b);
	b = copy(o); put64(shdr(o, b, tuner) + 24, o->c.elf.secs[text].offset);
	emit("section_overlap.o", b, o->size, "overlaps"); free(b);
	b = copy(o); put32(shdr(o, b, tuner), 0x7ffffff0);
	emit("section_name_range.o", b, o->size, "name offset 2147483632 out of range"); free(b);
	b = copy(o); put64(shdr(o, b, st) + 56, 23);
	emit("symtab_entsize.o", b, o->size, "symbol entry size 23"); free(b);
	b = copy(o); put32(shdr(o, b, st) + 40, 0);
	emit("symtab_strtab_link.o", b, o->size, "string table link 0"); free(b);
	b = copy(o); put64(shdr(o, b, tuner) + 32, o->c.elf.secs[tuner].size - 4);
	emit("code_size_unaligned.o", b, o->size, "not a multiple of the instruction size"); free(b);
	/* found by fuzz_loader: a NOBITS .bss of 4 GiB takes no file space */
	b = copy(o); put64(shdr(o, b, sec(o, ".bss")) + 32, 0xfffd0000ull);
	emit("bss_huge.o", b, o->size, "too large for a global data map"); free(b);
	b = copy(o); put32(shdr(o, b, sec(o, ".reltuner")) + 44, 200);
	emit("rel_target_range.o", b, o->size, "target section index 200 out of range"); free(b);
	b = copy(o); put64(shdr(o, b, sec(o, ".reltuner")) + 56, 24);
	emit("rel_entsize.o", b, o->size, "relocation entry size 24"); free(b);
}

static void symbol_cases(const struct obj *o)
{
	uint8_t *b;
	b = copy(o); put32(symp(o, b, 5), 0x0fffffff);
	emit("sym_name_range.o", b, o->size, "symbol 5 name offset 268435455 out of range"); free(b);
	int g = sym(o, "glob");
	b = copy(o); put16(symp(o, b, g) + 6, 0xfe00);
	emit("sym_shndx_range.o", b, o->size, "section index 65024 out of range"); free(b);
	int a = sym(o, "calls_a");
	b = copy(o); put64(symp(o, b, a) + 8, 4);
	emit("func_sym_unaligned.o", b, o->size, "not instruction-aligned"); free(b);
	b = copy(o); put64(symp(o, b, g) + 16, 0x10000);
	emit("func_sym_huge.o", b, o->size, "not instruction-aligned inside section"); free(b);
	/* leaf starts with an LDDW; make the function one slot long */
	int l = sym(o, "leaf");
	b = copy(o); put64(symp(o, b, l) + 16, 8);
	emit("lddw_cut_by_function.o", b, o->size, "LDDW truncated at the end of function 'leaf'");
	free(b);
}

static void reloc_cases(const struct obj *o)
{
	uint8_t *b;
	b = copy(o); put32(relp(o, b, ".reltuner", 3) + 12, 999);
	emit("reloc_sym_range.o", b, o->size,
	     "relocation 3 symbol index 999 out of range"); free(b);
	b = copy(o); put64(relp(o, b, ".reltuner", 1), 0x100000);
	emit("reloc_offset_range.o", b, o->size, "offset 1048576 outside section"); free(b);
	b = copy(o); put64(relp(o, b, ".reltuner", 0), 0x13);
	emit("reloc_offset_unaligned.o", b, o->size, "not at an instruction boundary"); free(b);
	b = copy(o); put32(relp(o, b, ".reltuner", 0) + 8, 77);
	emit("reloc_bad_type.o", b, o->size, "unsupported type 77"); free(b);
	b = copy(o); put64(relp(o, b, ".reltuner", 0), 0);
	emit("reloc_not_lddw.o", b, o->size, "is not LDDW"); free(b);
	b = copy(o); put64(relp(o, b, ".reltuner", 2), 8);
	emit("reloc_call_not_call.o", b, o->size, "not a bpf-to-bpf call"); free(b);
	b = copy(o); put32(relp(o, b, ".reltuner", 0) + 12, 0);
	emit("reloc_extern.o", b, o->size, "undefined (extern) symbol"); free(b);
	/* profiler: exit replaced by the first half of an LDDW carrying the relocation */
	int pr = sec(o, "profiler");
	uint64_t last = o->c.elf.secs[pr].size - 8;
	b = copy(o); b[o->c.elf.secs[pr].offset + last] = 0x18;
	put64(relp(o, b, ".relprofiler", 0), last);
	emit("lddw_at_section_end.o", b, o->size, "is truncated (no second slot)"); free(b);
	/* strlit's LDDW of the string literal: offset far past .rodata.str1.1 */
	b = copy(o); put32(b + o->c.elf.secs[pr].offset + 2 * 8 + 4, 1000);
	emit("global_data_offset_range.o", b, o->size, "offset 1000 into '.rodata.str1.1' is outside");
	free(b);
	/* calls_a insn 16 calls mid via the .text section symbol: aim it at nothing */
	b = copy(o); put32(b + o->c.elf.secs[sec(o, "tuner")].offset + 16 * 8 + 4, 100);
	emit("call_target_range.o", b, o->size, "is not the start of a .text function"); free(b);
	/* a relocation against a map symbol that points to no definition */
	int mp = sym(o, "bonus");
	b = copy(o); put64(symp(o, b, mp) + 8, 8);
	emit("map_sym_moved.o", b, o->size, "map 'bonus': definition [8, +32) outside section");
	free(b);
	b = copy(o); put32(relp(o, b, ".reltuner", 4) + 12, (uint32_t)sym(o, "LICENSE"));
	emit("reloc_not_map.o", b, o->size, "neither a map definition nor global data"); free(b);
	/* a function address (bpf_loop's callback) must be a .text function: calls_b is a
	 * program in the tuner section */
	b = copy(o); put32(relp(o, b, ".reltuner", 4) + 12, (uint32_t)sym(o, "calls_b"));
	emit("reloc_func_pointer.o", b, o->size, "is not the start of a .text function"); free(b);
	b = copy(o); put32(relp(o, b, ".reltuner", 2) + 12, (uint32_t)sym(o, "counter"));
	emit("reloc_call_to_data.o", b, o->size, "only .text functions can be called"); free(b);
}

static void btf_cases(const struct obj *o)
{
	const struct ld_section *s = &o->c.elf.secs[sec(o, ".BTF")];
	uint8_t *b, *h;
	/* found by fuzz_loader: a .BTF section header of type SHT_NULL has no contents */
	b = copy(o); put32(shdr(o, b, sec(o, ".BTF")) + 4, 0);
	emit("btf_section_null.o", b, o->size, "(.BTF) has no file contents"); free(b);
	b = copy(o); put32(shdr(o, b, sec(o, ".BTF.ext")) + 4, 8);
	emit("btf_ext_section_nobits.o", b, o->size, "(.BTF.ext) has no file contents"); free(b);
	b = copy(o); put16(b + s->offset, 0xbeef);
	emit("btf_bad_magic.o", b, o->size, ".BTF: bad magic 0xbeef"); free(b);
	b = copy(o); put32(b + s->offset + 12, 0x7fffffff);
	emit("btf_type_len.o", b, o->size, ".BTF: type section"); free(b);
	b = copy(o); put32(b + s->offset + 20, 0x10000000);
	emit("btf_str_len.o", b, o->size, ".BTF: string section"); free(b);
	b = copy(o); put32(b + s->offset + 4, 0x100000);
	emit("btf_hdr_len.o", b, o->size, ".BTF: header length"); free(b);
	/* a pointer type referencing a type id that does not exist */
	uint32_t ptr = btf_find(o, LD_BTF_KIND_PTR, NULL);
	b = copy(o); put32(btf_type_hdr(o, b, ptr) + 8, 99999);
	emit("btf_ref_range.o", b, o->size, "type id 99999 out of range"); free(b);
	b = copy(o); h = btf_type_hdr(o, b, ptr); put32(h + 4, 25u << 24);
	emit("btf_unknown_kind.o", b, o->size, "unknown kind 25"); free(b);
	uint32_t st = btf_find(o, LD_BTF_KIND_STRUCT, "ncclbpf_tuner_ctx");
	b = copy(o); h = btf_type_hdr(o, b, st); put32(h + 4, (LD_BTF_KIND_STRUCT << 24) | 0xffff);
	emit("btf_vlen_past_end.o", b, o->size, "past the end of the type section"); free(b);
	/* the map's `type` member: PTR -> ARRAY; turn that PTR into a typedef of itself */
	uint32_t var = btf_find(o, LD_BTF_KIND_VAR, "bonus");
	uint32_t def = o->c.btf.types[var].size_or_type;
	const uint8_t *m0 = o->c.btf.types[def].extra; /* first member: type */
	uint32_t p = ld_rd32(m0 + 4);
	b = copy(o); h = btf_type_hdr(o, b, p); put32(h + 4, LD_BTF_KIND_TYPEDEF << 24);
	put32(h + 8, p);
	emit("btf_modifier_loop.o", b, o->size, "type loop"); free(b);
	/* typedef __u32 (the key type) made a typedef of itself: size resolution loops */
	uint32_t td = btf_find(o, LD_BTF_KIND_TYPEDEF, "__u32");
	b = copy(o); put32(btf_type_hdr(o, b, td) + 8, td);
	emit("btf_typedef_loop.o", b, o->size, "type loop"); free(b);
	/* rename the member string "max_entries" */
	const char *strs = o->c.btf.strs;
	for (uint32_t off = 0; off + 11 < o->c.btf.str_len; off++)
		if (strcmp(strs + off, "max_entries") == 0) {
			b = copy(o);
			b[(const uint8_t *)strs - o->buf + off + 10] = 'z';
			emit("map_unknown_field.o", b, o->size, "unknown field 'max_entriez'");
			free(b);
			break;
		}
}

static void btf_ext_cases(const struct obj *o)
{
	const struct ld_section *s = &o->c.elf.secs[sec(o, ".BTF.ext")];
	uint32_t hdr = ld_rd32(s->data + 4);
	uint64_t fi = s->offset + hdr + ld_rd32(s->data + 8);  /* func info: rec_size, blocks */
	uint64_t li = s->offset + hdr + ld_rd32(s->data + 16); /* line info */
	uint8_t *b;
	b = copy(o); put16(b + s->offset, 0x1234);
	emit("btf_ext_bad_magic.o", b, o->size, ".BTF.ext: bad magic"); free(b);
	b = copy(o); put32(b + fi, 3);
	emit("btf_ext_rec_size.o", b, o->size, "func info: record size 3 invalid"); free(b);
	b = copy(o); put32(b + fi + 8, 0x7fffffff);
	emit("btf_ext_num_info.o", b, o->size, "run past the end of the block"); free(b);
	b = copy(o); put32(b + fi + 4, 0x0fffffff);
	emit("btf_ext_sec_name.o", b, o->size, "section name offset 268435455 out of range"); free(b);
	b = copy(o); put32(b + fi + 16, 1); /* first func record's type id: not a FUNC */
	emit("btf_ext_func_type.o", b, o->size, "is not a BTF FUNC"); free(b);
	b = copy(o); put32(b + li + 12, 0x100000); /* first line record's insn_off */
	emit("btf_ext_line_insn_range.o", b, o->size, "instruction offset 1048576 invalid"); free(b);
	b = copy(o); put32(b + li + 12 + 4, 0x0ffffff0);
	emit("btf_ext_line_str_range.o", b, o->size, "string offset"); free(b);
	b = copy(o); put32(b + s->offset + 12, 0x7ffffff0);
	emit("btf_ext_info_len.o", b, o->size, "func info [");
	free(b);
}

static void legacy_cases(const struct obj *o)
{
	uint8_t *b;
	int a = sym(o, "legacy_arr");
	b = copy(o); put64(symp(o, b, a) + 16, 8);
	emit("legacy_map_short.o", b, o->size, "legacy map 'legacy_arr'"); free(b);
	b = copy(o); put64(symp(o, b, a) + 8, 0x1000);
	emit("legacy_map_range.o", b, o->size, "outside section"); free(b);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s <build/tests/progs> <corpus dir>\n", argv[0]);
		return 2;
	}
	outdir = argv[2];
	char path[1024];
	snprintf(path, sizeof(path), "%s/expected.txt", outdir);
	manifest = fopen(path, "w");
	if (!manifest) {
		perror(path);
		return 1;
	}
	fprintf(manifest, "# file\texpected error substring (generated by gen_loader_corpus.c)\n");
	struct obj calls, legacy;
	load(&calls, argv[1], "loader_calls.bpf.o");
	load(&legacy, argv[1], "loader_legacy.bpf.o");
	elf_header_cases(&calls);
	section_cases(&calls);
	symbol_cases(&calls);
	reloc_cases(&calls);
	btf_cases(&calls);
	btf_ext_cases(&calls);
	legacy_cases(&legacy);
	fclose(manifest);
	printf("%d corpus files written to %s\n", written, outdir);
	return 0;
}

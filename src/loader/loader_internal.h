/* loader internals shared by the loader's .c files (not a contract for other modules).
 *
 * elf_reader.c  ELF64 LE header, section headers, string tables, symbols, REL/RELA
 * btf.c         .BTF: header, types, strings, size resolution
 * btf_ext.c     .BTF.ext: func info and line info records per section
 * maps_def.c    map definitions from .maps (BTF), `maps` (legacy) and global data
 * relocate.c    program extraction, subprogram linking, LDDW/call relocations
 * object.c      loader_open_mem/file, loader_close, line and func info per program
 */
#ifndef NCCLBPF_LOADER_INTERNAL_H
#define NCCLBPF_LOADER_INTERNAL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loader/object.h"

/* ---- ELF (own declarations: no <elf.h>) ---- */
#define LD_EM_BPF 247
#define LD_ET_REL 1
#define LD_SHT_NULL 0
#define LD_SHT_PROGBITS 1
#define LD_SHT_SYMTAB 2
#define LD_SHT_STRTAB 3
#define LD_SHT_RELA 4
#define LD_SHT_NOBITS 8
#define LD_SHT_REL 9
#define LD_SHF_WRITE 0x1
#define LD_SHF_ALLOC 0x2
#define LD_SHF_EXECINSTR 0x4
#define LD_SHN_UNDEF 0
#define LD_SHN_LORESERVE 0xff00
#define LD_SHN_ABS 0xfff1
#define LD_SHN_COMMON 0xfff2
#define LD_SHN_XINDEX 0xffff
#define LD_STT_NOTYPE 0
#define LD_STT_OBJECT 1
#define LD_STT_FUNC 2
#define LD_STT_SECTION 3
#define LD_STB_LOCAL 0
#define LD_STB_GLOBAL 1
#define LD_STB_WEAK 2

/* BPF relocation types (llvm/BinaryFormat/ELFRelocs/BPF.def) */
#define LD_R_BPF_NONE 0
#define LD_R_BPF_64_64 1
#define LD_R_BPF_64_ABS64 2
#define LD_R_BPF_64_ABS32 3
#define LD_R_BPF_64_NODYLD32 4
#define LD_R_BPF_64_32 10

/* Upper bounds that keep allocations sane for hostile input. */
#define LD_MAX_FILE_SIZE (256u << 20)
#define LD_MAX_PROG_INSNS (1u << 20)
/* .bss-like sections take no file space: cap what one global-data map may allocate */
#define LD_MAX_GLOBAL_DATA (64u << 20)

struct ld_section {
	const char *name;   /* validated, NUL-terminated inside .shstrtab */
	uint32_t type;
	uint64_t flags;
	uint64_t offset;
	uint64_t size;
	uint32_t link;
	uint32_t info;
	uint64_t entsize;
	const uint8_t *data; /* NULL for SHT_NOBITS / SHT_NULL */
};

struct ld_sym {
	const char *name; /* "" when unnamed; section symbols get the section name */
	uint8_t type;
	uint8_t bind;
	uint16_t shndx;
	uint64_t value;
	uint64_t size;
};

struct ld_reloc {
	uint64_t offset;
	uint32_t sym;
	uint32_t type;
	int64_t addend; /* RELA only; REL: 0 */
	uint32_t index; /* position in the file's relocation section (for messages) */
};

/* Relocations that apply to one section, sorted by offset. */
struct ld_relsec {
	uint32_t target;   /* section index relocated */
	uint32_t relsec;   /* index of the .rel section (for messages) */
	struct ld_reloc *rels;
	size_t cnt;
};

struct ld_elf {
	const uint8_t *buf;
	size_t size;
	struct ld_section *secs;
	uint32_t shnum;
	struct ld_sym *syms;
	uint32_t nsyms;
	uint32_t symtab_idx; /* 0 if none */
	struct ld_relsec *relsecs; /* one entry per relocated section */
	size_t relsec_cnt;
};

/* ---- BTF ---- */
#define LD_BTF_MAGIC 0xeB9F
#define LD_BTF_KIND_UNKN 0
#define LD_BTF_KIND_INT 1
#define LD_BTF_KIND_PTR 2
#define LD_BTF_KIND_ARRAY 3
#define LD_BTF_KIND_STRUCT 4
#define LD_BTF_KIND_UNION 5
#define LD_BTF_KIND_ENUM 6
#define LD_BTF_KIND_FWD 7
#define LD_BTF_KIND_TYPEDEF 8
#define LD_BTF_KIND_VOLATILE 9
#define LD_BTF_KIND_CONST 10
#define LD_BTF_KIND_RESTRICT 11
#define LD_BTF_KIND_FUNC 12
#define LD_BTF_KIND_FUNC_PROTO 13
#define LD_BTF_KIND_VAR 14
#define LD_BTF_KIND_DATASEC 15
#define LD_BTF_KIND_FLOAT 16
#define LD_BTF_KIND_DECL_TAG 17
#define LD_BTF_KIND_TYPE_TAG 18
#define LD_BTF_KIND_ENUM64 19
#define LD_BTF_MAX_DEPTH 32 /* modifier/typedef chains longer than this are loops */

struct ld_btf_type {
	uint32_t name_off;
	uint32_t kind;
	uint32_t vlen;
	bool kflag;
	uint32_t size_or_type; /* size for INT/STRUCT/..., referenced type id otherwise */
	const uint8_t *extra;  /* kind-specific data after the common header (validated) */
};

struct ld_btf_member {
	const char *name;
	uint32_t type;
	uint32_t offset; /* bits (kflag: low 24 bits) */
};

struct ld_btf {
	const uint8_t *types_start;
	const char *strs;
	uint32_t str_len;
	struct ld_btf_type *types; /* index = type id; types[0] is void */
	uint32_t nr_types;         /* including void */
};

/* ---- BTF.ext ---- */
struct ld_ext_func {
	uint32_t insn_off; /* bytes within the section */
	uint32_t type_id;
};
struct ld_ext_line {
	uint32_t insn_off;
	uint32_t file_off;
	uint32_t line_off;
	uint32_t line_col;
};
struct ld_ext_sec {
	const char *sec_name;
	struct ld_ext_func *funcs;
	size_t func_cnt;
	struct ld_ext_line *lines;
	size_t line_cnt;
};
struct ld_btf_ext {
	struct ld_ext_sec *secs;
	size_t sec_cnt;
};

/* Where a map lives in the file, for LDDW relocations. */
struct ld_map_loc {
	uint32_t shndx;    /* .maps / maps / data section */
	uint64_t offset;   /* offset of the map's definition (global data: 0) */
	uint64_t size;     /* bytes of the definition (global data: section size) */
	bool global_data;
};

/* Whole-load context. */
struct ld_ctx {
	struct ld_elf elf;
	struct ld_btf btf; /* nr_types == 0 when absent */
	bool has_btf;
	struct ld_btf_ext ext;
	bool has_ext;
	struct nb_object *obj;
	struct ld_map_loc *map_locs; /* parallel to obj->maps */
	char *err;
	size_t errlen;
	unsigned flags; /* NB_LOADER_* */
};

/* NB_LOADER_INSPECT: records an extern reference (deduplicated). 0 or -ENOMEM. */
int ld_add_extern(struct ld_ctx *c, const char *name, bool is_func);

/* Formats a message into the caller's error buffer; returns -code (code > 0). */
int ld_err(struct ld_ctx *c, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* "section N (name)" prefix helper: returns the section name or "?" */
const char *ld_secname(const struct ld_elf *e, uint32_t idx);

/* Overflow-safe range check: [off, off+len) inside [0, total). */
static inline bool ld_range_ok(uint64_t off, uint64_t len, uint64_t total)
{
	return off <= total && len <= total - off;
}

static inline uint32_t ld_rd32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint16_t ld_rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}
static inline uint64_t ld_rd64(const uint8_t *p)
{
	return (uint64_t)ld_rd32(p) | (uint64_t)ld_rd32(p + 4) << 32;
}

/* elf_reader.c */
int ld_elf_parse(struct ld_ctx *c, const uint8_t *buf, size_t size);
void ld_elf_free(struct ld_elf *e);
int ld_elf_find_section(const struct ld_elf *e, const char *name); /* index or -1 */
/* Relocations applying to section idx (NULL if none). */
const struct ld_relsec *ld_elf_relocs_for(const struct ld_elf *e, uint32_t idx);

/* btf.c */
int ld_btf_parse(struct ld_ctx *c, const uint8_t *data, uint64_t size);
void ld_btf_free(struct ld_btf *b);
/* String at off, or NULL when off is outside the string section. */
const char *ld_btf_str(const struct ld_btf *b, uint32_t off);
/* Type by id, or NULL. */
const struct ld_btf_type *ld_btf_type(const struct ld_btf *b, uint32_t id);
/* Follows typedef/const/volatile/restrict/type_tag; returns the id reached or 0 with err. */
int ld_btf_skip_mods(struct ld_ctx *c, uint32_t id, uint32_t *out);
int ld_btf_resolve_size(struct ld_ctx *c, uint32_t id, uint64_t *size);
int ld_btf_member(const struct ld_btf *b, const struct ld_btf_type *t, uint32_t i,
		  struct ld_btf_member *m);
/* Finds the DATASEC type named `name`; 0 if none. */
uint32_t ld_btf_find_datasec(const struct ld_btf *b, const char *name);

/* btf_ext.c */
int ld_btf_ext_parse(struct ld_ctx *c, const uint8_t *data, uint64_t size);
void ld_btf_ext_free(struct ld_btf_ext *x);
const struct ld_ext_sec *ld_btf_ext_sec(const struct ld_btf_ext *x, const char *sec_name);

/* maps_def.c */
int ld_collect_maps(struct ld_ctx *c);
/* Index of the map defined at (shndx, offset), or -1. */
int ld_map_at(const struct ld_ctx *c, uint32_t shndx, uint64_t offset, bool *global_data);

/* A function's code placed into a linked program: program entry first, then every .text
 * subprogram it calls, in the order they were first called. */
struct ld_segment {
	uint32_t shndx;    /* section the code comes from */
	uint64_t start;    /* first instruction index within that section */
	uint64_t cnt;      /* instructions */
	size_t pos;        /* first instruction index within the linked program */
	const char *name;  /* function symbol name */
};

/* relocate.c */
int ld_collect_programs(struct ld_ctx *c);

/* debug_info.c: fills prog->lines and prog->funcs from .BTF.ext (or symbols). */
int ld_program_debug_info(struct ld_ctx *c, struct nb_program *prog,
			  const struct ld_segment *segs, size_t nsegs);

#endif

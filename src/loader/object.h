/* loader: reads eBPF ELF objects (as produced by clang -target bpf, any version >= 14)
 * into the object model below. Own ELF64 little-endian reader (no libelf); BTF and
 * BTF.ext (func info, line info) parsing; map definitions from BTF `.maps`, the legacy
 * `maps` section and global data (.rodata/.data/.bss become single-entry array maps, as
 * libbpf does); relocations.
 *
 * The input is untrusted: every offset, size and index read from the file is checked and
 * a malformed object produces a precise error, never a crash or an out-of-bounds read.
 *
 * Resolution done by the loader (so later stages never see relocations):
 *  - each program is the instructions of one function from an executable section, with
 *    every `.text` subprogram it calls (transitively) appended after it, and
 *    BPF_PSEUDO_CALL immediates fixed up to the appended positions;
 *  - an LDDW relocated against a map symbol gets src_reg = BPF_PSEUDO_MAP_FD and
 *    imm = index in nb_object.maps; one against a global-data section gets
 *    src_reg = BPF_PSEUDO_MAP_VALUE, imm = index, and the next slot's imm = byte offset.
 *
 * Conventions (as libbpf, details in the src/loader sources):
 *  - maps are listed BTF `.maps` first (DATASEC order), then legacy `maps` entries, then one
 *    map per non-empty global data section (.rodata*, .data*, .bss*) named after the
 *    section (".rodata.str1.1" for string literals); .rodata* get BPF_F_RDONLY_PROG;
 *  - programs are listed by section, then by offset; a code section without function
 *    symbols is one program named after the section; an object whose only code is `.text`
 *    (conformance ELFs, hand-written objects) gets its global .text functions as programs;
 *  - funcs[] has one entry per function placed in the program (entry, then each appended
 *    subprogram), named from .BTF.ext func info when present, else from the symbol;
 *    lines[] may hold line 0 entries (compiler-generated code, line_src "").
 */
#ifndef NCCLBPF_LOADER_OBJECT_H
#define NCCLBPF_LOADER_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isa/isa.h"

/* Names (programs, maps, functions) up to the kernel's KSYM_NAME_LEN (512 with the NUL),
 * the longest a BTF name can be in practice; section names up to twice that. */
#define NB_NAME_MAX 512

enum nb_map_origin {
	NB_MAP_ORIGIN_BTF,    /* SEC(".maps") with BTF definition */
	NB_MAP_ORIGIN_LEGACY, /* SEC("maps") struct bpf_map_def */
	NB_MAP_ORIGIN_RODATA, /* .rodata (read-only to programs) */
	NB_MAP_ORIGIN_DATA,   /* .data */
	NB_MAP_ORIGIN_BSS,    /* .bss */
};

/* A map as the object declares it. Kernel map-type numbers (BPF_MAP_TYPE_*). */
struct nb_map_def {
	char name[NB_NAME_MAX]; /* symbol name; ".rodata" etc. for global data */
	enum nb_map_origin origin;
	uint32_t type;
	uint32_t key_size;
	uint32_t value_size;
	uint32_t max_entries;
	uint32_t map_flags;
	uint32_t pinning;       /* LIBBPF_PIN_BY_NAME (1) = shared by name across objects */
	uint32_t btf_key_type;  /* BTF type ids, 0 if unknown */
	uint32_t btf_value_type;
	uint8_t *init_data;     /* global data initial contents (value_size bytes), or NULL */
	/* libbpf fields that mean nothing here (no NUMA placement, no bloom filter or arena
	 * maps): accepted, kept for inspection (`ncclbpf info` notes them), otherwise ignored */
	uint32_t numa_node;
	uint64_t map_extra;
};

/* Source position of an instruction, from .BTF.ext line info. */
struct nb_line_info {
	uint32_t insn;        /* instruction index within the program */
	const char *file;     /* points into the object's string storage */
	const char *line_src; /* text of the source line, "" if unknown */
	uint32_t line;
	uint32_t col;
};

/* A function inside a program (the program itself is func 0), from .BTF.ext func info
 * or from the symbol table when there is no BTF. */
struct nb_func_info {
	uint32_t insn;
	char name[NB_NAME_MAX];
};

struct nb_program {
	char name[NB_NAME_MAX];     /* function symbol name */
	char section[NB_NAME_MAX * 2]; /* ELF section, e.g. "tuner", "profiler", "tuner/chunk" */
	struct bpf_insn *insns;     /* program then appended subprograms */
	size_t insn_cnt;
	size_t main_insn_cnt;       /* instructions of the entry function itself */
	struct nb_line_info *lines; /* sorted by insn */
	size_t line_cnt;
	struct nb_func_info *funcs; /* sorted by insn; funcs[0] is the entry */
	size_t func_cnt;
};

/* A reference to a symbol the object does not define (.kconfig / .ksyms variables, kfunc
 * calls), kept only when opened with NB_LOADER_INSPECT. */
struct nb_extern {
	char name[NB_NAME_MAX];
	bool is_func; /* a call (kfunc), else a variable */
};

struct nb_object {
	char name[256]; /* file name or caller-given name */
	struct nb_program *progs;
	size_t prog_cnt;
	struct nb_map_def *maps;
	size_t map_cnt;
	char license[128];
	bool has_btf;
	bool has_btf_ext;
	struct nb_extern *externs; /* NB_LOADER_INSPECT only; otherwise an error */
	size_t extern_cnt;
	/* private storage owned by the object (strings, BTF copy) */
	void *priv;
};

/* Parse an object from memory. The buffer is copied; the caller keeps ownership.
 * Returns 0 or a negative errno with a precise message ("section 5 (.rel.text):
 * relocation 3 symbol index 99 out of range (17 symbols)") in err. */
int loader_open_mem(const void *buf, size_t size, const char *name, struct nb_object **out,
		    char *err, size_t errlen);
/* Inspection (`ncclbpf info`, `disasm`): also parse objects only the kernel's loader can
 * resolve. References to extern symbols are listed in obj->externs instead of failing: an
 * extern LDDW stays a plain 64-bit constant 0 and a kfunc call stays "call -1" (a pseudo call
 * to itself), exactly as the compiler emitted them. Such an object must never be run: the
 * runtime opens objects without this flag. */
#define NB_LOADER_INSPECT 0x1u
int loader_open_mem_flags(const void *buf, size_t size, const char *name, unsigned flags,
			  struct nb_object **out, char *err, size_t errlen);
int loader_open_file_flags(const char *path, unsigned flags, struct nb_object **out, char *err,
			   size_t errlen);

/* The message never repeats the path (callers print "PATH: message"): "No such file or
 * directory", "not an ELF file (...)". A directory reads as an error. */
int loader_open_file(const char *path, struct nb_object **out, char *err, size_t errlen);
void loader_close(struct nb_object *obj);

/* Input files (read_file.c; every reader of a user-named file uses these: the loader, the
 * CLI's commands). Only regular files are opened: a directory (-EISDIR), FIFO, socket or
 * device (-EINVAL) is refused with "not a regular file (a FIFO)" in err, without blocking
 * and before a byte is read. loader_open_regular returns a blocking read-only fd or
 * -errno; loader_read_file reads the whole file, at most max bytes (-EFBIG "larger than
 * the N-byte limit" beyond), into *buf (malloc'd, NUL-terminated after *len bytes). err
 * never repeats the path. */
int loader_open_regular(const char *path, char *err, size_t errlen);
int loader_read_file(const char *path, size_t max, void **buf, size_t *len, char *err,
		     size_t errlen);

/* Line info for an instruction index (the last entry at or before insn), or NULL. */
const struct nb_line_info *loader_line_for_insn(const struct nb_program *prog, size_t insn);

#endif

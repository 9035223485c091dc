/* Test support: runs llvm-objdump on an object and keeps what it shows (function and
 * object symbols with sizes, raw instruction slots per section, relocation symbol per
 * slot), as an independent reference for the loader's structural checks. */
#ifndef NCCLBPF_TESTS_LOADER_OBJDUMP_REF_H
#define NCCLBPF_TESTS_LOADER_OBJDUMP_REF_H

#include <stddef.h>
#include <stdint.h>

#define OD_MAX_SYMS 256
#define OD_MAX_SECS 32

struct od_sym {
	char name[64];
	char sec[64];
	uint64_t value, size;
	char kind; /* 'F' function, 'O' object, 'd' section, ' ' other */
};

struct od_sec {
	char name[64];
	uint8_t *bytes;      /* 8 bytes per slot */
	char (*reloc)[64];   /* relocation symbol per slot, "" if none */
	size_t slots;
};

struct od_ref {
	struct od_sym syms[OD_MAX_SYMS];
	int nsyms;
	struct od_sec secs[OD_MAX_SECS];
	int nsecs;
};

/* Returns 0, or -1 if objdump could not be run or its output not parsed. */
int od_load(const char *objdump, const char *obj, struct od_ref *out);
void od_free(struct od_ref *r);
const struct od_sym *od_sym(const struct od_ref *r, const char *name);
const struct od_sec *od_sec(const struct od_ref *r, const char *name);

#endif

/* Builds a ready policy object from rules: a copy of the shipped table policy
 * (policies/tuned_rules.bpf.c, embedded in the CLI at build time) with the rules written
 * into its .rodata, loaded and verified with the library and checked rule by rule before
 * it is written (atomically: temporary file + rename). */
#ifndef NCCLBPF_TUNE_OBJECT_H
#define NCCLBPF_TUNE_OBJECT_H

#include <stddef.h>

#include "tools/tune_input.h"

/* The embedded template (generated from build/policies/tuned_rules.bpf.o). */
extern const unsigned char ncclbpf_tuned_rules_template[];
extern const size_t ncclbpf_tuned_rules_template_len;

/* Patches a copy of tmpl with the rules, verifies and checks it. On success *out (malloc'd)
 * holds the object. Returns 0 or negative errno with err filled. */
int tune_object_build(const void *tmpl, size_t tmpl_len, const struct tune_rule *rules, size_t n,
		      void **out, size_t *out_len, char *err, size_t errlen);

/* The decision of the rules for one input, host-side reference of the policy's semantics:
 * index of the first matching rule or -1. */
int tune_rules_match(const struct tune_rule *rules, size_t n, int coll, unsigned long long bytes,
		     int nnodes, int nranks, int num_pipe_ops);

/* A global of an object's .rodata (libbpf's `const volatile` configuration). */
struct tune_rodata_sym {
	char name[64];
	size_t offset; /* file offset of its bytes */
	size_t size;
};
/* Lists the .rodata symbols of an ELF64 little-endian BPF object (bounds-checked).
 * *syms is malloc'd. Returns 0 or negative errno with err filled. */
int tune_rodata_symbols(const void *obj, size_t len, struct tune_rodata_sym **syms, size_t *n,
			char *err, size_t errlen);
/* Loads obj from memory and verifies every program for the hook its section names. */
int tune_verify_object(const void *obj, size_t len, char *err, size_t errlen);

/* Reads the rule table back from an object built by tune_object_build (or any object with
 * the tuned_rules layout): rules must hold TUNE_MAX_RULES. Returns 0 with *n set, or -EINVAL
 * with err filled ("not a rule table: ...", an unknown layout, a bad count). */
int tune_rules_read(const void *obj, size_t len, struct tune_rule *rules, size_t *n, char *err,
		    size_t errlen);
/* One rule as an nccl_tuner.conf line (no newline): what `rules compile` reads back. */
void tune_rule_format(const struct tune_rule *r, char *buf, size_t len);

/* Writes buf to path atomically (same-directory temporary file, fsync, rename). */
int tune_write_atomic(const char *path, const void *buf, size_t len, char *err, size_t errlen);

#endif

/* The reload request another rank publishes in the agreed map ncclbpf_reload_req
 * (tuner_reload.c, docs/control.md "A reload requested on one process"): encoding and the
 * checks on what arrives (bytes from other ranks: hostile input, fuzz_reload_req). No
 * dependency on the rest of the library. */
#ifndef NCCLBPF_TUNER_RELOAD_REQ_H
#define NCCLBPF_TUNER_RELOAD_REQ_H

#include <stdbool.h>
#include <stdint.h>

#define RELOAD_REQ_SPEC_BYTES 512 /* longest spec a request carries, NUL included */
#define RELOAD_REQ_HDR_WORDS 4    /* id, content, hook mask, check */
#define RELOAD_REQ_WORDS (RELOAD_REQ_HDR_WORDS + RELOAD_REQ_SPEC_BYTES / 8)

/* A spec another rank may be made to load: every comma-separated entry an absolute path,
 * no "..". */
bool reload_req_spec_ok(const char *spec);
/* Fills w. Returns 0, or -EINVAL (id 0, mask not one hook or all hooks, spec not ok or too
 * long). */
int reload_req_encode(uint64_t *w, uint64_t id, uint64_t content, unsigned hook_mask,
		      const char *spec);
/* Checks a published request. Returns 0 (spec, content and hook set: hook is the hook
 * index, or n_hooks for "every hook"), -ENOENT (no request), -EBADMSG (check word wrong, as
 * for a mix of two requests, or no NUL), -EPERM (spec not ok), -EINVAL (bad hook mask). */
int reload_req_decode(const uint64_t *w, unsigned n_hooks, char *spec, uint64_t *content,
		      unsigned *hook);
/* The request's identity (id and check: a mix and its parts differ). */
uint64_t reload_req_key(const uint64_t *w);

#endif

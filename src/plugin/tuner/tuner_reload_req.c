/* Reload requests across ranks: tuner_reload_req.h. */
#include "plugin/tuner/tuner_reload_req.h"

#include <errno.h>
#include <string.h>

uint64_t reload_req_key(const uint64_t *w)
{
	return w[0] ^ (w[3] * 0x9e3779b97f4a7c15ull);
}

static uint64_t req_check(const uint64_t *w)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (int i = 0; i < RELOAD_REQ_WORDS; i++) {
		if (i == 3)
			continue;
		for (int b = 0; b < 8; b++) {
			h ^= (w[i] >> (8 * b)) & 0xff;
			h *= 0x100000001b3ull;
		}
	}
	return h ? h : 1;
}

bool reload_req_spec_ok(const char *spec)
{
	if (!*spec || strstr(spec, ".."))
		return false;
	for (const char *e = spec; e;) {
		while (*e == ' ' || *e == '\t')
			e++;
		if (*e != '/')
			return false;
		e = strchr(e, ',');
		if (e)
			e++;
	}
	return true;
}

static bool mask_ok(unsigned mask, unsigned n_hooks)
{
	return mask && ((!(mask & (mask - 1)) && mask < (1u << n_hooks)) ||
			mask == (1u << n_hooks) - 1);
}

int reload_req_encode(uint64_t *w, uint64_t id, uint64_t content, unsigned hook_mask,
		      const char *spec)
{
	size_t len = strlen(spec);
	if (!id || !hook_mask || len >= RELOAD_REQ_SPEC_BYTES || !reload_req_spec_ok(spec))
		return -EINVAL;
	memset(w, 0, RELOAD_REQ_WORDS * 8);
	w[0] = id;
	w[1] = content;
	w[2] = hook_mask;
	memcpy(&w[RELOAD_REQ_HDR_WORDS], spec, len);
	w[3] = req_check(w);
	return 0;
}

int reload_req_decode(const uint64_t *w, unsigned n_hooks, char *spec, uint64_t *content,
		      unsigned *hook)
{
	if (!w[0])
		return -ENOENT;
	memcpy(spec, &w[RELOAD_REQ_HDR_WORDS], RELOAD_REQ_SPEC_BYTES);
	if (w[3] != req_check(w) || !memchr(spec, '\0', RELOAD_REQ_SPEC_BYTES)) {
		spec[0] = '\0';
		return -EBADMSG;
	}
	if (!reload_req_spec_ok(spec))
		return -EPERM;
	unsigned mask = (unsigned)w[2];
	if (w[2] >> 32 || n_hooks >= 32 || !mask_ok(mask, n_hooks))
		return -EINVAL;
	*content = w[1];
	*hook = (mask & (mask - 1)) ? n_hooks : (unsigned)__builtin_ctz(mask);
	return 0;
}

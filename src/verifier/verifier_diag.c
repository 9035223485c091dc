/* Diagnostics: stable error codes, the first rejection of a run, compiler-style output. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "verifier/verifier_internal.h"

static const char *const codes[NB_VERR_COUNT] = {
	[NB_VERR_OK] = "OK",
	[NB_VERR_NULL_DEREF] = "E-NULL-DEREF",
	[NB_VERR_NULL_ARITH] = "E-NULL-ARITH",
	[NB_VERR_CTX_ACCESS] = "E-CTX-ACCESS",
	[NB_VERR_CTX_WRITE] = "E-CTX-WRITE",
	[NB_VERR_MAP_VALUE_OOB] = "E-MAP-VALUE-OOB",
	[NB_VERR_STACK_OOB] = "E-STACK-OOB",
	[NB_VERR_HELPER_UNKNOWN] = "E-HELPER-UNKNOWN",
	[NB_VERR_HELPER_DENIED] = "E-HELPER-DENIED",
	[NB_VERR_HELPER_ARG] = "E-HELPER-ARG",
	[NB_VERR_STACK_LIMIT] = "E-STACK-LIMIT",
	[NB_VERR_CALL_DEPTH] = "E-CALL-DEPTH",
	[NB_VERR_INFINITE_LOOP] = "E-INFINITE-LOOP",
	[NB_VERR_BUDGET] = "E-BUDGET",
	[NB_VERR_POINTER_LEAK] = "E-POINTER-LEAK",
	[NB_VERR_DIV_ZERO] = "E-DIV-ZERO",
	[NB_VERR_UNINIT_REG] = "E-UNINIT-REG",
	[NB_VERR_UNINIT_STACK] = "E-UNINIT-STACK",
	[NB_VERR_BAD_JUMP] = "E-BAD-JUMP",
	[NB_VERR_FALL_OFF] = "E-FALL-OFF",
	[NB_VERR_BAD_INSN] = "E-BAD-INSN",
	[NB_VERR_UNREACHABLE] = "E-UNREACHABLE",
	[NB_VERR_PROG_SIZE] = "E-PROG-SIZE",
	[NB_VERR_POINTER_ARITH] = "E-POINTER-ARITH",
	[NB_VERR_INVALID_MEM] = "E-INVALID-MEM",
	[NB_VERR_READONLY_MAP] = "E-READONLY-MAP",
	[NB_VERR_RETURN] = "E-RETURN",
	[NB_VERR_RANK_LOCAL] = "E-RANK-LOCAL",
	[NB_VERR_POINTER_CMP] = "E-POINTER-CMP",
	[NB_VERR_MISALIGNED] = "E-MISALIGNED",
	[NB_VERR_WRITEONLY_MAP] = "E-WRITEONLY-MAP",
	[NB_VERR_COST] = "E-COST",
};

/* the codes that can also be warnings */
static const char *const warn_codes[NB_VERR_COUNT] = {
	[NB_VERR_DIV_ZERO] = "W-DIV-ZERO",
};

const char *verifier_err_code(enum nb_verr code)
{
	if ((unsigned)code >= NB_VERR_COUNT || !codes[code])
		return "E-UNKNOWN";
	return codes[code];
}

const char *verifier_diag_code(const struct nb_verifier_diag *diag)
{
	if (diag->warning && (unsigned)diag->code < NB_VERR_COUNT && warn_codes[diag->code])
		return warn_codes[diag->code];
	return verifier_err_code(diag->code);
}

static const struct nb_line_info *line_for(const struct nb_program *prog, size_t insn)
{
	if (!prog || !prog->lines || prog->line_cnt == 0)
		return NULL;
	size_t lo = 0, hi = prog->line_cnt; /* last entry with .insn <= insn */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (prog->lines[mid].insn <= insn)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &prog->lines[lo - 1] : NULL;
}

uint32_t verifier_source_line(const struct verifier_env *env, size_t insn)
{
	const struct nb_line_info *li = line_for(env->prog, insn);
	return li ? li->line : 0;
}

static void diag_fill(const struct verifier_env *env, struct nb_verifier_diag *d,
		      enum nb_verr code, size_t insn, const char *fmt, va_list ap)
{
	memset(d, 0, sizeof(*d));
	d->code = code;
	d->insn = insn;
	const struct nb_line_info *li = line_for(env->prog, insn);
	if (li) {
		d->file = li->file;
		d->line = li->line;
		d->col = li->col;
		d->line_src = li->line_src;
	}
	vsnprintf(d->msg, sizeof(d->msg), fmt, ap);
}

int verr(struct verifier_env *env, enum nb_verr code, size_t insn, const char *fmt, ...)
{
	if (env->failed)
		return -EACCES;
	env->failed = true;
	va_list ap;
	va_start(ap, fmt);
	diag_fill(env, env->diag, code, insn, fmt, ap);
	va_end(ap);
	return -EACCES;
}

void vwarn(struct verifier_env *env, enum nb_verr code, size_t insn, const char *fmt, ...)
{
	struct nb_verifier_warnings *w = env->warnings;
	if (!w || (env->insn_flags[insn] & VF_WARNED))
		return;
	env->insn_flags[insn] |= VF_WARNED; /* once per instruction, whatever the paths */
	if (w->count++ >= NB_VERIFIER_MAX_WARNINGS)
		return;
	va_list ap;
	va_start(ap, fmt);
	diag_fill(env, &w->w[w->count - 1], code, insn, fmt, ap);
	va_end(ap);
	w->w[w->count - 1].warning = true;
}

const char *vtype_name(uint8_t type)
{
	switch (type) {
	case VT_NOT_INIT: return "uninitialised";
	case VT_SCALAR: return "a number";
	case VT_PTR_CTX: return "the context pointer";
	case VT_PTR_STACK: return "a stack pointer";
	case VT_PTR_MAP_VALUE: return "a map value pointer";
	case VT_PTR_MAP_VALUE_OR_NULL: return "a map value pointer or NULL";
	case VT_CONST_MAP_PTR: return "a map";
	case VT_PTR_MEM: return "the input memory pointer";
	case VT_PTR_FUNC: return "a function's address";
	default: return "?";
	}
}

void vreg_describe(const struct verifier_env *env, const struct vreg *r, char *buf, size_t len)
{
	switch (r->type) {
	case VT_SCALAR:
		if (sc_is_const(&r->s))
			snprintf(buf, len, "the number %lld", (long long)r->s.t.value);
		else
			snprintf(buf, len, "a number in [%lld, %lld]", (long long)r->s.smin,
				 (long long)r->s.smax);
		break;
	case VT_PTR_MAP_VALUE:
	case VT_PTR_MAP_VALUE_OR_NULL:
	case VT_CONST_MAP_PTR: {
		const char *name = r->map < env->map_cnt ? env->maps[r->map].name : "?";
		if (r->type == VT_CONST_MAP_PTR)
			snprintf(buf, len, "the map '%s'", name);
		else if (r->type == VT_PTR_MAP_VALUE)
			snprintf(buf, len, "a pointer into a '%s' map value", name);
		else
			snprintf(buf, len, "the result of a '%s' lookup", name);
		break;
	}
	default:
		snprintf(buf, len, "%s", vtype_name(r->type));
	}
}


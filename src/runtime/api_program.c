/* Public API: programs. prepare = validate + verify for a hook + link + choose how to run
 * (JIT, interpreter, checked interpreter); run = the decision path: a size check, an epoch
 * only when hash/LRU maps are referenced, one indirect call. No lock, no allocation. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"
#include "runtime/runtime.h"
#include "verifier/verifier.h"

const char *ncclbpf_program_name(const struct ncclbpf_program *prog)
{
	return prog ? prog->nbp->name : NULL;
}

const char *ncclbpf_program_section(const struct ncclbpf_program *prog)
{
	return prog ? prog->nbp->section : NULL;
}

size_t ncclbpf_program_insn_count(const struct ncclbpf_program *prog)
{
	return prog ? prog->nbp->insn_cnt : 0;
}

enum ncclbpf_hook ncclbpf_program_section_hook(const struct ncclbpf_program *prog)
{
	return prog && prog->section_hook >= 0 ? (enum ncclbpf_hook)prog->section_hook
					       : NCCLBPF_HOOK_AUTO;
}

bool ncclbpf_program_is_jitted(const struct ncclbpf_program *prog)
{
	return prog && prog->prepared && prog->entry;
}

const char *ncclbpf_hook_name(enum ncclbpf_hook hook)
{
	if (hook == NCCLBPF_HOOK_AUTO)
		return "auto";
	if ((int)hook < 0 || (int)hook >= NB_HOOK_COUNT)
		return NULL;
	const struct nb_hook_desc *h = hook_desc((enum nb_hook_type)hook);
	return h ? h->name : NULL;
}

int ncclbpf_hook_from_name(const char *name, enum ncclbpf_hook *hook)
{
	const struct nb_hook_desc *h = name ? hook_by_name(name) : NULL;
	if (!h || !hook)
		return -ENOENT;
	*hook = (enum ncclbpf_hook)h->type;
	return 0;
}

static const struct nb_object *nbo_of(const struct ncclbpf_object *obj)
{
	return obj->nbo ? obj->nbo : &obj->raw;
}

static const char *hook_names_list(void)
{
	return "tuner, tuner/chunk, profiler, net, env";
}

/* Verification according to the mode. Returns 0 when the program may load. */
static int prepare_verify(struct ncclbpf_program *prog, const struct nb_hook_desc *h,
			  enum ncclbpf_verify_mode mode, uint64_t budget, uint32_t mem_size,
			  char *err, size_t errlen)
{
	const struct nb_object *nbo = nbo_of(prog->obj);
	struct nb_verifier_opts vopts = {.budget = budget, .mem_size = mem_size,
					 .allow_rank_local = runtime_env_rank_local_allowed()};
	struct nb_verifier_diag diag;
	struct nb_verifier_warnings warns;

	memset(&diag, 0, sizeof(diag));
	memset(&warns, 0, sizeof(warns));
	vopts.warnings = &warns;
	free(prog->visited);
	prog->visited = calloc(prog->nbp->insn_cnt ? prog->nbp->insn_cnt : 1, 1);
	if (!prog->visited) {
		snprintf(err, errlen, "out of memory verifying '%s'", prog->nbp->name);
		return -ENOMEM;
	}
	vopts.visited = prog->visited;
	int rc = runtime_check_program(nbo, prog->nbp, h, &vopts, &diag, NULL, err, errlen);
	/* accepted code the ISA defines but that is likely a mistake (a divisor that may be
	 * zero): said once per instruction at load, never on a run */
	for (size_t i = 0; rc == 0 && i < warns.count && i < NB_VERIFIER_MAX_WARNINGS; i++) {
		char w[1024];
		verifier_format_diag(&warns.w[i], prog->nbp, w, sizeof(w));
		runtime_log(NB_LOG_WARN, NB_LOG_INIT, "program '%s' of %s: %s", prog->nbp->name,
			    prog->obj->name, w);
	}
	if (rc == 0)
		return 0;
	free(prog->visited); /* rejected (or warn mode): nothing is known to be dead */
	prog->visited = NULL;
	if (rc != -EACCES || mode != NCCLBPF_VERIFY_WARN)
		return rc;
	runtime_log(NB_LOG_WARN, NB_LOG_INIT,
		    "NCCLBPF_VERIFY=warn: LOADING UNVERIFIED program '%s' of %s for hook %s in the "
		    "checked interpreter (no JIT; faults and runaway loops are stopped and its "
		    "writes discarded); the verifier rejected it:\n%s",
		    prog->nbp->name, prog->obj->name, h->name, err);
	prog->unverified = true;
	return 0;
}

static void prepare_helpers(struct ncclbpf_program *prog, const struct nb_hook_desc *h,
			    bool only_allowed)
{
	for (int32_t id = 0; id < NB_HELPER_MAX; id++) {
		const struct nb_helper_proto *proto = hook_helper(h, id);
		vm_helper_fn impl = runtime_helper_impl(h->type, id);
		prog->protos[id] = proto;
		prog->helpers[id] = (proto || !only_allowed) ? impl : NULL;
	}
}

/* JIT when asked or by default; falls back to the interpreter unless JIT was required. */
static int prepare_exec(struct ncclbpf_program *prog, enum ncclbpf_exec_mode mode, char *err,
			size_t errlen)
{
	char why[256] = "";
	struct vm_jit_options jopts = {
		.inline_array_lookup = true,
		.maps = prog->obj->map_handles,
		.map_cnt = prog->obj->map_cnt,
	};

	/* Unverified code runs only where every access, helper argument and instruction
	 * count is checked: never in the JIT or the plain interpreter, which trust the proof
	 * (regression: NCCLBPF_VERIFY=warn ran a NULL dereference in the JIT: SIGSEGV). */
	if (prog->unverified) {
		if (mode == NCCLBPF_EXEC_JIT || mode == NCCLBPF_EXEC_INTERPRET) {
			snprintf(err, errlen,
				 "'%s' is not verified: unverified programs run only in the checked "
				 "interpreter (NCCLBPF_EXEC_CHECKED), not the %s",
				 prog->nbp->name, mode == NCCLBPF_EXEC_JIT ? "JIT" : "plain interpreter");
			return -EPERM;
		}
		prog->checked = true;
		return 0;
	}
	prog->checked = mode == NCCLBPF_EXEC_CHECKED;
	if (mode == NCCLBPF_EXEC_INTERPRET || mode == NCCLBPF_EXEC_CHECKED)
		return 0;
	if (mode == NCCLBPF_EXEC_DEFAULT && !runtime_env_jit_enabled()) {
		runtime_log(NB_LOG_INFO, NB_LOG_INIT, "%s: NCCLBPF_JIT=0, using the interpreter",
			    prog->nbp->name);
		return 0;
	}
	int rc = -ENOTSUP;
	if (!vm_jit_available())
		snprintf(why, sizeof(why), "JIT not available on this architecture");
	else
		rc = vm_jit_compile(&prog->vm, &jopts, &prog->jit, why, sizeof(why));
	if (rc == 0) {
		prog->entry = vm_jit_entry(prog->jit);
		if (!prog->hook->ctx_is_raw_memory) {
			bool direct = !vm_jit_may_fault(prog->jit) && !prog->needs_epoch;
			prog->fast = vm_jit_runner(prog->jit);
			prog->fast_entry = direct ? prog->entry : NULL;
			prog->fast_store = direct ? vm_jit_store_entry(prog->jit) : NULL;
			prog->fast_ctx_size = prog->hook->ctx_size;
		}
		return 0;
	}
	prog->jit = NULL;
	if (mode == NCCLBPF_EXEC_JIT) {
		snprintf(err, errlen, "%s", why);
		return rc;
	}
	snprintf(err, errlen, "JIT failed for '%s' (%s): using the interpreter",
		 prog->nbp->name, why);
	runtime_log(NB_LOG_WARN, NB_LOG_INIT, "%s", err);
	return 0;
}

int ncclbpf_program_prepare(struct ncclbpf_program *prog, enum ncclbpf_hook hook,
			    const struct ncclbpf_prepare_opts *opts, char *err, size_t errlen)
{
	return runtime_program_prepare_mem(prog, hook, opts, 0, err, errlen);
}

int runtime_program_prepare_mem(struct ncclbpf_program *prog, enum ncclbpf_hook hook,
				const struct ncclbpf_prepare_opts *opts, uint32_t mem_size,
				char *err, size_t errlen)
{
	struct ncclbpf_prepare_opts o = {0};
	int rc;

	if (!err)
		errlen = 0;
	if (errlen)
		err[0] = '\0';
	if (!prog)
		return -EINVAL;
	if (opts) {
		size_t n = opts->sz && opts->sz < sizeof(o) ? opts->sz : sizeof(o);
		memcpy(&o, opts, n);
	}
	if ((unsigned)o.exec_mode > NCCLBPF_EXEC_CHECKED ||
	    (unsigned)o.verify_mode > NCCLBPF_VERIFY_OFF) {
		snprintf(err, errlen, "unknown exec mode %d or verify mode %d", (int)o.exec_mode,
			 (int)o.verify_mode);
		return -EINVAL;
	}
	if (hook != NCCLBPF_HOOK_AUTO && ((int)hook < 0 || (int)hook >= NB_HOOK_COUNT)) {
		snprintf(err, errlen, "unknown hook %d", (int)hook);
		return -EINVAL;
	}
	int type = hook == NCCLBPF_HOOK_AUTO ? prog->section_hook : (int)hook;
	if (type < 0) {
		snprintf(err, errlen, "program '%s': section '%s' names no hook (expected %s)",
			 prog->nbp->name, prog->nbp->section, hook_names_list());
		return -EINVAL;
	}
	const struct nb_hook_desc *h = hook_desc((enum nb_hook_type)type);
	if (!h) {
		snprintf(err, errlen, "unknown hook %d", (int)hook);
		return -EINVAL;
	}
	runtime_program_release(prog);

	enum ncclbpf_verify_mode vmode = o.verify_mode;
	if (vmode == NCCLBPF_VERIFY_DEFAULT)
		vmode = runtime_env_verify_mode();
	prog->unverified = vmode == NCCLBPF_VERIFY_OFF;
	if (vmode != NCCLBPF_VERIFY_OFF)
		rc = prepare_verify(prog, h, vmode, o.verify_budget, mem_size, err, errlen);
	else /* instruction format and references are checked in every mode */
		rc = runtime_check_program(nbo_of(prog->obj), prog->nbp, h, NULL, NULL, NULL, err,
					   errlen);
	if (rc < 0)
		return rc;
	prog->raw_verified = h->ctx_is_raw_memory && vmode == NCCLBPF_VERIFY_STRICT;
	prog->raw_mem_size = mem_size;
	rc = runtime_link_program(prog, err, errlen);
	if (rc < 0)
		return rc;
	prog->hook = h;
	prepare_helpers(prog, h, true); /* unverified: checked mode checks the prototypes */
	prog->vm.insns = prog->linked;
	prog->vm.insn_cnt = prog->nbp->insn_cnt;
	prog->vm.helpers = prog->helpers;
	prog->vm.helper_protos = prog->protos;
	rc = prepare_exec(prog, o.exec_mode, err, errlen);
	if (rc < 0) {
		runtime_program_release(prog);
		return rc;
	}
	prog->prepared = true;
	return 0;
}

static bool ctx_writable(const struct nb_hook_desc *h)
{
	if (h->ctx_is_raw_memory)
		return true;
	for (size_t i = 0; i < h->field_cnt; i++)
		if (h->fields[i].writable)
			return true;
	return false;
}

/* Checked interpreter: the context and every array / global-data map of the object are
 * the regions the program may touch (helpers' map values are added by the interpreter).
 * Not inlined: its region table (~2.4 KiB) must stay off the decision path's frame. */
static __attribute__((noinline)) int run_checked(const struct ncclbpf_program *prog,
						 void *ctx, size_t ctx_size, uint64_t *r0,
						 struct vm_fault *fault)
{
	struct vm_checked chk;
	const struct ncclbpf_object *obj = prog->obj;

	chk.region_cnt = 0;
	chk.insn_budget = RUNTIME_CHECKED_INSN_BUDGET;
	chk.insns_executed = 0;
	chk.maps = (void *const *)obj->map_handles;
	chk.map_cnt = obj->map_cnt;
	if (ctx && ctx_size)
		vm_checked_add_region(&chk, (uint64_t)(uintptr_t)ctx, ctx_size,
				      ctx_writable(prog->hook), "context");
	for (size_t i = 0; i < obj->map_cnt; i++) {
		struct nb_map *m = obj->maps[i].map;
		uint8_t *base = map_array_base(m);
		if (!base)
			continue;
		vm_checked_add_region(&chk, (uint64_t)(uintptr_t)base,
				      (uint64_t)map_array_stride(m) * map_max_entries(m),
				      !obj->maps[i].readonly_prog, obj->maps[i].def->name);
	}
	return vm_interp_run(&prog->vm, (uint64_t)(uintptr_t)ctx, ctx_size, r0, &chk, fault);
}

static const char *fault_kind_name(enum vm_fault_kind k)
{
	switch (k) {
	case VM_FAULT_MEM_OOB: return "memory access out of bounds";
	case VM_FAULT_MEM_READONLY: return "write to read-only memory";
	case VM_FAULT_NULL: return "NULL dereference";
	case VM_FAULT_CALL_DEPTH: return "call depth exceeded";
	case VM_FAULT_BAD_HELPER: return "call of an unavailable helper";
	case VM_FAULT_BUDGET: return "instruction budget exhausted";
	case VM_FAULT_BAD_INSN: return "invalid instruction";
	case VM_FAULT_PC_OOB: return "fell off the end of the program";
	default: return "fault";
	}
}

/* The interpreter writes a message; the JIT may report kind and pc only. */
static void format_fault(const struct ncclbpf_program *prog, const struct vm_fault *f,
			 char *err, size_t errlen)
{
	if (f->msg[0])
		snprintf(err, errlen, "%s: %s", prog->nbp->name, f->msg);
	else
		snprintf(err, errlen, "%s: insn %zu: %s", prog->nbp->name, f->pc,
			 fault_kind_name(f->kind));
}

static __attribute__((noinline, cold)) int run_fault(const struct ncclbpf_program *prog,
							 const struct vm_jit_fault_rec *rec,
							 char *err, size_t errlen)
{
	struct vm_fault fault;
	vm_jit_fault_decode(rec, &fault);
	if (err && errlen)
		format_fault(prog, &fault, err, errlen);
	return -EFAULT;
}

static int run_slow(const struct ncclbpf_program *prog, void *ctx, size_t ctx_size,
		    uint64_t *ret, char *err, size_t errlen);

/* Everything but the direct path: JIT code that may fault (a fault record on the stack) or
 * needs an epoch, the interpreters, a NULL result pointer, and every error. */
static __attribute__((noinline)) int run_general(const struct ncclbpf_program *prog, void *ctx,
						 size_t ctx_size, uint64_t *ret, char *err,
						 size_t errlen)
{
	if (prog && prog->fast && ctx && ctx_size == prog->fast_ctx_size) {
		struct vm_jit_fault_rec rec = { 0, 0 };
		if (prog->needs_epoch)
			map_epoch_enter();
		uint64_t v = prog->fast((uint64_t)(uintptr_t)ctx, ctx_size, &rec);
		if (prog->needs_epoch)
			map_epoch_exit();
		if (rec.count != 0)
			return run_fault(prog, &rec, err, errlen);
		if (ret)
			*ret = v;
		return 0;
	}
	return run_slow(prog, ctx, ctx_size, ret, err, errlen);
}

/* The decision path: the plugin calls this on every collective. JIT code of a hook that
 * can neither fault nor needs a map epoch is a tail call of its store entry (it writes
 * *ret and returns 0 itself), so no frame of this function stays around the program;
 * everything else is out of line. Regressions: the checked interpreter's state was inlined
 * here (a 2.4 KiB frame, six saved registers) and the JIT was reached through vm_jit_run,
 * ~4 ns above the raw entry; then a call + result store from a 1-push frame, +1.2..1.6 ns. */
int ncclbpf_program_run(const struct ncclbpf_program *prog, void *ctx, size_t ctx_size,
			uint64_t *ret, char *err, size_t errlen)
{
	if (__builtin_expect(prog && prog->fast_store && ctx && ret &&
			     ctx_size == prog->fast_ctx_size, 1))
		return prog->fast_store((uint64_t)(uintptr_t)ctx, ctx_size, ret);
	return run_general(prog, ctx, ctx_size, ret, err, errlen);
}

enum runtime_run_path runtime_program_run_path(const struct ncclbpf_program *prog)
{
	if (!prog || !prog->prepared)
		return RUNTIME_RUN_UNPREPARED;
	if (prog->fast_store)
		return RUNTIME_RUN_JIT_DIRECT;
	if (prog->jit)
		return prog->hook->ctx_is_raw_memory ? RUNTIME_RUN_JIT_RAW_MEMORY
		       : vm_jit_may_fault(prog->jit) ? RUNTIME_RUN_JIT_FAULT_REC
						     : RUNTIME_RUN_JIT_EPOCH;
	return prog->checked ? RUNTIME_RUN_CHECKED : RUNTIME_RUN_INTERPRETER;
}

const char *runtime_run_path_name(enum runtime_run_path path)
{
	switch (path) {
	case RUNTIME_RUN_JIT_DIRECT: return "JIT, direct entry";
	case RUNTIME_RUN_JIT_FAULT_REC: return "JIT, fault record per call (may fault)";
	case RUNTIME_RUN_JIT_EPOCH: return "JIT, inside a map epoch (hash/LRU maps)";
	case RUNTIME_RUN_JIT_RAW_MEMORY: return "JIT, raw memory (size checked per call)";
	case RUNTIME_RUN_INTERPRETER: return "interpreter";
	case RUNTIME_RUN_CHECKED: return "checked interpreter";
	default: return "not prepared";
	}
}

static int run_slow(const struct ncclbpf_program *prog, void *ctx, size_t ctx_size,
		    uint64_t *ret, char *err, size_t errlen)
{
	struct vm_fault fault;
	uint64_t r0 = 0;
	int rc = 0;

	if (!prog || !prog->prepared) {
		if (err && errlen)
			snprintf(err, errlen, "program not prepared");
		return -EINVAL;
	}
	const struct nb_hook_desc *h = prog->hook;
	if (!h->ctx_is_raw_memory && (ctx_size != h->ctx_size || !ctx)) {
		if (err && errlen)
			snprintf(err, errlen, "context of %zu bytes at %p: hook '%s' takes %u bytes",
				 ctx_size, ctx, h->name, h->ctx_size);
		return -EINVAL;
	}
	if (prog->raw_verified &&
	    (ctx_size != prog->raw_mem_size || (prog->raw_mem_size && !ctx))) {
		if (err && errlen)
			snprintf(err, errlen, "memory of %zu bytes at %p: the program was verified for "
				 "%u bytes", ctx_size, ctx, prog->raw_mem_size);
		return -EINVAL;
	}
	fault.msg[0] = '\0';
	if (prog->needs_epoch)
		map_epoch_enter();
	if (prog->jit)
		rc = vm_jit_run(prog->jit, (uint64_t)(uintptr_t)ctx, ctx_size, &r0, &fault);
	else if (!prog->checked)
		rc = vm_interp_run(&prog->vm, (uint64_t)(uintptr_t)ctx, ctx_size, &r0, NULL, &fault);
	else
		rc = run_checked(prog, ctx, ctx_size, &r0, &fault);
	if (prog->needs_epoch)
		map_epoch_exit();
	if (rc < 0) {
		if (err && errlen)
			format_fault(prog, &fault, err, errlen);
		return -EFAULT;
	}
	if (ret)
		*ret = r0;
	return 0;
}

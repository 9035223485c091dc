/* vm: executes linked programs. The interpreter (vm_interp.c) is the reference semantics
 * (RFC 9669 exactly: division by zero -> 0, modulo by zero -> dst unchanged (32-bit:
 * zero-extended), INT_MIN / -1 -> INT_MIN, INT_MIN % -1 -> 0, shift amounts masked to 63/31,
 * ALU32 results zero-extended). The x86-64 JIT (jit_x86_64*.c) must produce identical
 * results; differential tests prove it.
 *
 * A linked program (struct vm_program) has no pseudo map instructions left: the runtime
 * replaces LDDW map forms by plain 64-bit immediates (the struct nb_map pointer for
 * BPF_PSEUDO_MAP_FD, the value address for BPF_PSEUDO_MAP_VALUE) before execution. A
 * function address (BPF_PSEUDO_FUNC, bpf_loop's callback) keeps its src_reg and holds the
 * function's absolute instruction index as its immediate; the engines load that number.
 *
 * Checked mode: every load, store and atomic is checked against the regions the runtime
 * handed out (context, each live stack frame, global-data/array map storage, map values
 * returned by helpers, caller memory) and the call depth and an optional instruction budget
 * are enforced; a violation stops the program with a precise vm_fault. The verifier's
 * soundness tests run accepted programs in this mode.
 */
#ifndef NCCLBPF_VM_VM_H
#define NCCLBPF_VM_VM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "isa/isa.h"
#include "verifier/hooks.h"

typedef uint64_t (*vm_helper_fn)(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4,
				 uint64_t r5);

struct nb_map;

/* bpf_loop (NB_HELPER_LOOP) is run by the interpreter and the JIT themselves: they call
 * the callback through the VM, in a frame of its own. A program may call it when its helper
 * table has this marker (or any function) at that id; the function itself is never called
 * by the VM and returns -ENOTSUP when something else calls it. */
uint64_t vm_helper_bpf_loop(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4, uint64_t r5);

struct vm_program {
	const struct bpf_insn *insns; /* linked: no pseudo LDDW forms */
	size_t insn_cnt;
	/* helper implementations indexed by id; NULL = not available (fault if called) */
	const vm_helper_fn *helpers;
	/* prototypes indexed by id (for checked mode: which helpers return map values) */
	const struct nb_helper_proto *const *helper_protos;
};

enum vm_fault_kind {
	VM_FAULT_NONE = 0,
	VM_FAULT_MEM_OOB,        /* access outside every region */
	VM_FAULT_MEM_READONLY,   /* write into a read-only region */
	VM_FAULT_NULL,           /* access near address 0 */
	VM_FAULT_CALL_DEPTH,     /* more than BPF_MAX_CALL_DEPTH frames */
	VM_FAULT_BAD_HELPER,     /* helper id without implementation */
	VM_FAULT_BUDGET,         /* instruction budget exhausted (checked mode) */
	VM_FAULT_BAD_INSN,       /* should be impossible after isa_validate */
	VM_FAULT_PC_OOB,         /* fell off the end */
};

struct vm_fault {
	enum vm_fault_kind kind;
	size_t pc;        /* instruction index */
	uint64_t addr;    /* faulting address for memory faults */
	uint32_t size;    /* access size */
	char msg[200];    /* "insn 12: 4-byte write at 0x... is 3 bytes past the end of the
			   * context (48 bytes at 0x...)" */
};

struct vm_region {
	uint64_t start;
	uint64_t size;
	bool writable;
	const char *what; /* "context", "map value of 'stats'", "caller memory" */
};

#define VM_MAX_REGIONS 64

/* State of a checked run. The caller fills the initial regions; the interpreter adds the
 * stack frames and helper-returned map values itself. */
struct vm_checked {
	struct vm_region regions[VM_MAX_REGIONS];
	size_t region_cnt;
	uint64_t insn_budget; /* 0 = unlimited */
	uint64_t insns_executed;
	/* Map handles a helper's map argument may be (the object's maps); a helper call is
	 * checked against its prototype before it runs (map handle, key/value/buffer memory
	 * in a region), so unverified programs cannot hand the host a wild pointer. */
	void *const *maps;
	size_t map_cnt;
};

/* Runs the program with r1 = a1, r2 = a2 (conformance passes mem, len; hooks pass ctx, 0).
 * chk NULL: fast unchecked mode (program must have been verified or be trusted).
 * Returns 0 and sets *r0, or -EFAULT with *fault filled (fault may be NULL). */
int vm_interp_run(const struct vm_program *prog, uint64_t a1, uint64_t a2, uint64_t *r0,
		  struct vm_checked *chk, struct vm_fault *fault);

/* Adds a region to a checked run (returns -ENOSPC when full). */
int vm_checked_add_region(struct vm_checked *chk, uint64_t start, uint64_t size, bool writable,
			  const char *what);

/* ---- JIT (x86-64) ---- */

/* Entry point of compiled code: System V ABI, r1 = a1, r2 = a2, returns r0. */
typedef uint64_t (*vm_jit_fn)(uint64_t a1, uint64_t a2);

struct vm_jit_image; /* opaque: code mapping, freed by vm_jit_free */

struct vm_jit_options {
	bool inline_array_lookup; /* inline bpf_map_lookup_elem on constant array maps */
	/* The maps the linked program may reference (LDDW immediates equal to one of these
	 * pointers are map handles). The JIT inlines `call 1` (helper 1 present) only when r1
	 * was set in the same basic block by an LDDW of one of these maps of type ARRAY or
	 * PERCPU_ARRAY. NULL/0: no inlining. */
	struct nb_map *const *maps;
	size_t map_cnt;
};

/* Compiles a linked program. Returns 0, or -ENOTSUP on other architectures, -ENOMEM,
 * -EPERM when the system forbids executable mappings; err explains. Code memory is written
 * while RW, then mprotect'ed RX; never RWX. -EINVAL ("jit: insn N: ...") for programs it
 * cannot compile with the interpreter's exact behaviour (unknown encodings, unlinked pseudo
 * LDDW, writes to r10, jumps between functions, a function falling through into the next,
 * a local call to insn 0): the interpreter runs those. Verified programs never hit these. */
int vm_jit_compile(const struct vm_program *prog, const struct vm_jit_options *opts,
		   struct vm_jit_image **out, char *err, size_t errlen);
vm_jit_fn vm_jit_entry(const struct vm_jit_image *img);
size_t vm_jit_code_size(const struct vm_jit_image *img);
void vm_jit_free(struct vm_jit_image *img);
/* true when this build has a JIT for the host architecture */
bool vm_jit_available(void);

/* Runs compiled code like vm_interp_run (unchecked mode): returns 0 and sets *r0, or
 * -EFAULT with *fault filled (kind and pc; fault may be NULL) for the run-time faults the
 * JIT detects exactly as the interpreter does: VM_FAULT_CALL_DEPTH (a local call from the
 * BPF_MAX_CALL_DEPTH-th frame), VM_FAULT_BAD_HELPER (helper id without implementation),
 * VM_FAULT_PC_OOB (falling off the end). Memory is not checked (verified programs only).
 * Thread-safe; the fault is reported per call. */
int vm_jit_run(const struct vm_jit_image *img, uint64_t a1, uint64_t a2, uint64_t *r0,
	       struct vm_fault *fault);
/* The per-call entry behind vm_jit_run, for a caller that inlines its fast path (the
 * runtime's decision path): after a call, rec->count != 0 means the run faulted; decode it
 * with vm_jit_fault_decode. info = kind | pc << 8 | detail << 32. */
struct vm_jit_fault_rec {
	uint64_t info;
	uint64_t count;
};
typedef uint64_t (*vm_jit_run_fn)(uint64_t a1, uint64_t a2, struct vm_jit_fault_rec *rec);
vm_jit_run_fn vm_jit_runner(const struct vm_jit_image *img);
/* The store entry: the same code as vm_jit_entry with the result stored through the third
 * argument; returns 0. Only for code that can never fault (NULL otherwise, and NULL without
 * a JIT): a caller whose own result is 0-or-error can then tail-call it, so that no frame
 * of its own stays around the program (the runtime's ncclbpf_program_run). */
typedef int (*vm_jit_store_fn)(uint64_t a1, uint64_t a2, uint64_t *r0);
vm_jit_store_fn vm_jit_store_entry(const struct vm_jit_image *img);
/* false when the code can never fault (no local calls, no missing helper, no way past the
 * end): its raw entry then needs no fault record at all */
bool vm_jit_may_fault(const struct vm_jit_image *img);
void vm_jit_fault_decode(const struct vm_jit_fault_rec *rec, struct vm_fault *fault);
/* The raw entry (vm_jit_entry) cannot report faults: a faulting call returns 0 and is
 * counted here (the last fault's kind/pc is kept too). For the runtime's statistics. */
uint64_t vm_jit_fault_count(const struct vm_jit_image *img);
/* Kind and pc of the most recent fault of a raw-entry call (VM_FAULT_NONE if none). */
void vm_jit_last_fault(const struct vm_jit_image *img, enum vm_fault_kind *kind, size_t *pc);

#endif

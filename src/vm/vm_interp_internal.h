/* Internal interface between the interpreter loop (vm_interp.c) and its checked-mode
 * bookkeeping (vm_interp_checked.c). Not used outside src/vm/vm_interp*.c. */
#ifndef NCCLBPF_VM_INTERP_INTERNAL_H
#define NCCLBPF_VM_INTERP_INTERNAL_H

#include "vm/vm.h"

#define VM_NULL_GUARD 4096 /* accesses below this address are NULL dereferences */

/* Per-run state of checked mode. The live stack frames are regions computed from the
 * frame area and the current depth; helper-returned map values are appended to
 * chk->regions for the run and removed when it ends. */
struct vm_check_state {
	struct vm_checked *chk;
	size_t base_cnt;   /* regions the caller registered */
	size_t ring_next;  /* next helper region to recycle when chk->regions is full */
	uint64_t stack_lo; /* address of frame 0's lowest byte */
	unsigned depth;    /* index of the current frame (0 = entry) */
	char names[VM_MAX_REGIONS][64];
};

__attribute__((format(printf, 5, 6))) void vm_fault_set(struct vm_fault *f,
							 enum vm_fault_kind kind, size_t pc,
							 uint64_t addr, const char *fmt, ...);

/* 0 when [addr, addr+size) lies in one region (writable if write); else fills f and
 * returns -EFAULT. */
int vm_check_mem(struct vm_check_state *st, size_t pc, uint64_t addr, uint32_t size, bool write,
		 struct vm_fault *f);

/* Before helper `id` runs: its arguments match its prototype (a known map handle, key /
 * value / buffer memory inside readable regions). 0, or -EFAULT with f filled. */
int vm_check_helper_args(struct vm_check_state *st, const struct vm_program *prog, int32_t id,
			 const uint64_t *reg, size_t pc, struct vm_fault *f);

/* After helper `id` returned r0 with r1 = its first argument: registers the map value it
 * returned when its prototype says it returns one. */
void vm_check_helper_result(struct vm_check_state *st, const struct vm_program *prog, int32_t id,
			    uint64_t r1, uint64_t r0);

#endif

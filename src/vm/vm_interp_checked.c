/* Checked mode of the interpreter: region bookkeeping and precise fault messages.
 * Kept out of the interpreter loop so that the unchecked loop stays small. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "maps/map.h"
#include "vm/vm_interp_internal.h"

#define VM_NEAR_BYTES 64

void vm_fault_set(struct vm_fault *f, enum vm_fault_kind kind, size_t pc, uint64_t addr,
		  const char *fmt, ...)
{
	if (!f)
		return;
	f->kind = kind;
	f->pc = pc;
	f->addr = addr;
	f->size = 0;
	int n = snprintf(f->msg, sizeof(f->msg), "insn %zu: ", pc);
	if (n < 0 || (size_t)n >= sizeof(f->msg))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->msg + n, sizeof(f->msg) - (size_t)n, fmt, ap);
	va_end(ap);
}

int vm_checked_add_region(struct vm_checked *chk, uint64_t start, uint64_t size, bool writable,
			  const char *what)
{
	if (!chk)
		return -EINVAL;
	if (chk->region_cnt >= VM_MAX_REGIONS)
		return -ENOSPC;
	struct vm_region *r = &chk->regions[chk->region_cnt++];
	r->start = start;
	r->size = size;
	r->writable = writable;
	r->what = what ? what : "memory";
	return 0;
}

static const char *const vm_frame_names[BPF_MAX_CALL_DEPTH] = {
	"stack frame 0", "stack frame 1", "stack frame 2", "stack frame 3",
	"stack frame 4", "stack frame 5", "stack frame 6", "stack frame 7",
};

/* Region i of the run: the live stack frames first, then chk->regions. */
static size_t vm_region_count(const struct vm_check_state *st)
{
	return st->depth + 1 + st->chk->region_cnt;
}

static struct vm_region vm_region_at(const struct vm_check_state *st, size_t i)
{
	if (i <= st->depth) {
		struct vm_region r = { st->stack_lo + i * BPF_STACK_SIZE, BPF_STACK_SIZE, true,
				       vm_frame_names[i] };
		return r;
	}
	return st->chk->regions[i - st->depth - 1];
}

int vm_check_mem(struct vm_check_state *st, size_t pc, uint64_t addr, uint32_t size, bool write,
		 struct vm_fault *f)
{
	const char *rw = write ? "write" : "read";
	uint64_t end = addr + size;
	size_t n = vm_region_count(st);
	const struct vm_region *ro = NULL;
	struct vm_region ro_copy;
	for (size_t i = 0; i < n; i++) {
		struct vm_region r = vm_region_at(st, i);
		if (end < addr || addr < r.start || end - r.start > r.size)
			continue;
		if (!write || r.writable)
			return 0;
		ro_copy = r;
		ro = &ro_copy;
	}
	if (ro) {
		vm_fault_set(f, VM_FAULT_MEM_READONLY, pc, addr,
			     "%u-byte write at 0x%" PRIx64 " into read-only %s (%" PRIu64
			     " bytes at 0x%" PRIx64 ")",
			     size, addr, ro->what, ro->size, ro->start);
	} else if (addr < VM_NULL_GUARD) {
		vm_fault_set(f, VM_FAULT_NULL, pc, addr,
			     "%u-byte %s at 0x%" PRIx64 " is a NULL pointer dereference", size, rw,
			     addr);
	} else {
		/* Describe the access relative to the region it overlaps, or the nearest one. */
		struct vm_region best = { 0, 0, false, NULL };
		uint64_t best_dist = UINT64_MAX;
		for (size_t i = 0; i < n; i++) {
			struct vm_region r = vm_region_at(st, i);
			uint64_t rend = r.start + r.size;
			uint64_t dist = addr >= rend ? addr - rend + 1
					: end <= r.start ? r.start - end + 1
							 : 0; /* 0: overlaps; else gap + 1 */
			if (dist < best_dist) {
				best_dist = dist;
				best = r;
			}
		}
		uint64_t bend = best.start + best.size;
		/* close to a region (overlapping or less than VM_NEAR_BYTES away): say by how
		 * much the access misses it; otherwise name the nearest region */
		if (!best.what)
			vm_fault_set(f, VM_FAULT_MEM_OOB, pc, addr,
				     "%u-byte %s at 0x%" PRIx64 " is not inside any region (none)",
				     size, rw, addr);
		else if (best_dist <= VM_NEAR_BYTES && addr >= best.start)
			vm_fault_set(f, VM_FAULT_MEM_OOB, pc, addr,
				     "%u-byte %s at 0x%" PRIx64 " is %" PRIu64
				     " bytes past the end of %s (%" PRIu64 " bytes at 0x%" PRIx64 ")",
				     size, rw, addr, end - bend, best.what, best.size, best.start);
		else if (best_dist <= VM_NEAR_BYTES)
			vm_fault_set(f, VM_FAULT_MEM_OOB, pc, addr,
				     "%u-byte %s at 0x%" PRIx64 " starts %" PRIu64
				     " bytes before %s (%" PRIu64 " bytes at 0x%" PRIx64 ")",
				     size, rw, addr, best.start - addr, best.what, best.size,
				     best.start);
		else
			vm_fault_set(f, VM_FAULT_MEM_OOB, pc, addr,
				     "%u-byte %s at 0x%" PRIx64 " is not inside any region (nearest: "
				     "%s, %" PRIu64 " bytes at 0x%" PRIx64 ", %" PRIu64 " bytes %s)",
				     size, rw, addr, best.what, best.size, best.start,
				     addr >= bend ? addr - bend : best.start - end,
				     addr >= bend ? "after its end" : "before its start");
	}
	if (f)
		f->size = size;
	return -EFAULT;
}

int vm_check_helper_args(struct vm_check_state *st, const struct vm_program *prog, int32_t id,
			 const uint64_t *reg, size_t pc, struct vm_fault *f)
{
	const struct nb_helper_proto *proto = prog->helper_protos ? prog->helper_protos[id] : NULL;
	struct nb_map *map = NULL;
	if (!proto) /* the runtime gives every available helper one; bare VM users trust theirs */
		return 0;
	for (int a = 0; a < 5; a++) {
		uint64_t v = reg[a + 1];
		switch (proto->args[a]) {
		case NB_ARG_CONST_MAP_PTR: {
			bool known = !st->chk->maps; /* no list: the caller vouches for handles */
			for (size_t i = 0; i < st->chk->map_cnt && !known; i++)
				known = st->chk->maps[i] == (void *)(uintptr_t)v;
			if (!known) {
				vm_fault_set(f, VM_FAULT_BAD_HELPER, pc, v,
					     "argument r%d of %s is not a map of this object", a + 1,
					     proto->name);
				return -EFAULT;
			}
			map = (struct nb_map *)(uintptr_t)v;
			break;
		}
		case NB_ARG_PTR_TO_MAP_KEY:
		case NB_ARG_PTR_TO_MAP_VALUE: {
			if (!map) {
				vm_fault_set(f, VM_FAULT_BAD_HELPER, pc, v, "%s: no map argument",
					     proto->name);
				return -EFAULT;
			}
			uint32_t n = proto->args[a] == NB_ARG_PTR_TO_MAP_KEY ? map_key_size(map)
									    : map_value_size(map);
			if (vm_check_mem(st, pc, v, n, false, f))
				return -EFAULT;
			break;
		}
		case NB_ARG_PTR_TO_MEM: {
			uint64_t n = a < 4 ? reg[a + 2] : 0;
			if (n == 0 || n > 4096 || vm_check_mem(st, pc, v, (uint32_t)n, false, f)) {
				if (n == 0 || n > 4096)
					vm_fault_set(f, VM_FAULT_BAD_HELPER, pc, v,
						     "buffer size %" PRIu64 " for %s", n, proto->name);
				return -EFAULT;
			}
			break;
		}
		default:
			break;
		}
	}
	return 0;
}

void vm_check_helper_result(struct vm_check_state *st, const struct vm_program *prog, int32_t id,
			    uint64_t r1, uint64_t r0)
{
	const struct nb_helper_proto *proto = prog->helper_protos ? prog->helper_protos[id] : NULL;
	if (!proto || proto->ret != NB_RET_MAP_VALUE_OR_NULL || r0 == 0 || r1 == 0)
		return;
	struct vm_checked *chk = st->chk;
	struct nb_map *map = (struct nb_map *)(uintptr_t)r1;
	uint64_t size = map_value_size(map);
	bool writable = !(map_flags(map) & NB_MAP_F_RDONLY_PROG);
	for (size_t i = st->base_cnt; i < chk->region_cnt; i++)
		if (chk->regions[i].start == r0 && chk->regions[i].size == size)
			return;
	size_t slot;
	if (chk->region_cnt < VM_MAX_REGIONS) {
		slot = chk->region_cnt++;
	} else if (st->base_cnt < VM_MAX_REGIONS) {
		/* full: recycle the oldest value region this run added */
		if (st->ring_next < st->base_cnt || st->ring_next >= VM_MAX_REGIONS)
			st->ring_next = st->base_cnt;
		slot = st->ring_next++;
	} else {
		return; /* the caller used every slot: later accesses fault as out of bounds */
	}
	snprintf(st->names[slot], sizeof(st->names[slot]), "map value of '%s'", map_name(map));
	chk->regions[slot] = (struct vm_region){ r0, size, writable, st->names[slot] };
}

uint64_t vm_helper_bpf_loop(uint64_t r1, uint64_t r2, uint64_t r3, uint64_t r4, uint64_t r5)
{
	(void)r1, (void)r2, (void)r3, (void)r4, (void)r5;
	return (uint64_t)-ENOTSUP; /* the engines run bpf_loop themselves (vm.h) */
}

/* `ncclbpf info OBJ`: what an object contains, as the runtime sees it: programs with their
 * section, size and hook; maps with kernel type, sizes and flags; BTF and license. */
#include <stdio.h>

#include "maps/map.h"
#include "runtime/runtime.h"

int cmd_info(int argc, char **argv);

static const char *map_type_name(uint32_t t, char *buf, size_t len)
{
	switch (t) {
	case NB_MAP_TYPE_HASH: return "hash";
	case NB_MAP_TYPE_ARRAY: return "array";
	case NB_MAP_TYPE_PERCPU_ARRAY: return "percpu_array";
	case NB_MAP_TYPE_LRU_HASH: return "lru_hash";
	default: snprintf(buf, len, "type %u", t); return buf;
	}
}

int cmd_info(int argc, char **argv)
{
	char err[1024];
	struct ncclbpf_object *obj;

	if (argc != 2) {
		fprintf(stderr, "usage: ncclbpf info OBJ\n");
		return 1;
	}
	if (ncclbpf_object_open_file(argv[1], &obj, err, sizeof(err)) < 0) {
		fprintf(stderr, "ncclbpf: %s: %s\n", argv[1], err);
		return 1;
	}
	printf("object:  %s\n", ncclbpf_object_name(obj));
	printf("license: %s\n", ncclbpf_object_license(obj)[0] ? ncclbpf_object_license(obj)
							     : "(none)");
	printf("BTF:     %s\n", ncclbpf_object_has_btf(obj) ? "yes" : "no");
	printf("BTF.ext: %s\n", obj->nbo && obj->nbo->has_btf_ext ? "yes" : "no");
	size_t np = ncclbpf_object_program_count(obj);
	printf("\nprograms (%zu):\n", np);
	printf("  %-16s %-24s %6s  %s\n", "section", "name", "insns", "hook");
	for (size_t i = 0; i < np; i++) {
		struct ncclbpf_program *p = ncclbpf_object_program(obj, i);
		enum ncclbpf_hook h = ncclbpf_program_section_hook(p);
		printf("  %-16s %-24s %6zu  %s\n", ncclbpf_program_section(p),
		       ncclbpf_program_name(p), ncclbpf_program_insn_count(p),
		       h == NCCLBPF_HOOK_AUTO ? "(none)" : ncclbpf_hook_name(h));
	}
	size_t nm = ncclbpf_object_map_count(obj);
	printf("\nmaps (%zu):\n", nm);
	printf("  %-24s %-13s %5s %6s %11s  %s\n", "name", "type", "key", "value", "max_entries",
	       "flags");
	for (size_t i = 0; i < nm; i++) {
		struct ncclbpf_map *m = ncclbpf_object_map(obj, i);
		char tb[32];
		printf("  %-24s %-13s %5u %6u %11u  0x%x%s\n", ncclbpf_map_name(m),
		       map_type_name(ncclbpf_map_type(m), tb, sizeof(tb)), ncclbpf_map_key_size(m),
		       ncclbpf_map_value_size(m), ncclbpf_map_max_entries(m), m->def->map_flags,
		       m->pinned ? " pinned" : "");
	}
	ncclbpf_object_close(obj);
	return 0;
}

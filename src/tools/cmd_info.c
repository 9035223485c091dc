/* `ncclbpf info [--json] OBJ`: what an object contains, as the loader reads it: programs
 * with their section, size and hook; maps with kernel type, sizes and flags; BTF and
 * license. Inspection only: no map is created, so objects written for the kernel (perf
 * event arrays, ring buffers, ...) can be inspected even though the runtime refuses to
 * load them. */
#include <stdio.h>
#include <string.h>

#include "loader/object.h"
#include "maps/map.h"
#include "tools/cli.h"
#include "verifier/hooks.h"

/* Kernel map type names (enum bpf_map_type), as bpftool prints them. */
static const char *const kernel_map_types[] = {
	"unspec", "hash", "array", "prog_array", "perf_event_array", "percpu_hash",
	"percpu_array", "stack_trace", "cgroup_array", "lru_hash", "lru_percpu_hash",
	"lpm_trie", "array_of_maps", "hash_of_maps", "devmap", "sockmap", "cpumap", "xskmap",
	"sockhash", "cgroup_storage", "reuseport_sockarray", "percpu_cgroup_storage", "queue",
	"stack", "sk_storage", "devmap_hash", "struct_ops", "ringbuf", "inode_storage",
	"task_storage", "bloom_filter", "user_ringbuf", "cgrp_storage", "arena",
};

static const char *map_type_name(uint32_t t, char *buf, size_t len)
{
	if (t < sizeof(kernel_map_types) / sizeof(kernel_map_types[0]))
		return kernel_map_types[t];
	snprintf(buf, len, "type %u", t);
	return buf;
}

/* Types the runtime can create (maps/map.h); others are kernel-only. */
static bool map_type_supported(uint32_t t)
{
	return t == NB_MAP_TYPE_HASH || t == NB_MAP_TYPE_ARRAY || t == NB_MAP_TYPE_PERCPU_ARRAY ||
	       t == NB_MAP_TYPE_LRU_HASH;
}

static const char *origin_name(enum nb_map_origin o)
{
	switch (o) {
	case NB_MAP_ORIGIN_BTF: return "btf";
	case NB_MAP_ORIGIN_LEGACY: return "legacy";
	case NB_MAP_ORIGIN_RODATA: return "rodata";
	case NB_MAP_ORIGIN_DATA: return "data";
	default: return "bss";
	}
}

static const char *hook_of(const struct nb_program *p)
{
	const struct nb_hook_desc *h = hook_for_section(p->section);
	return h ? h->name : NULL;
}

static void print_json(const char *path, const struct nb_object *o)
{
	struct cli_json j;
	cli_json_init(&j, stdout);
	cli_json_object(&j, NULL);
	cli_json_str(&j, "schema", "ncclbpf.info/1");
	cli_json_str(&j, "file", path);
	cli_json_str(&j, "license", o->license);
	cli_json_bool(&j, "btf", o->has_btf);
	cli_json_bool(&j, "btf_ext", o->has_btf_ext);
	cli_json_array(&j, "programs");
	for (size_t i = 0; i < o->prog_cnt; i++) {
		const struct nb_program *p = &o->progs[i];
		cli_json_object(&j, NULL);
		cli_json_str(&j, "name", p->name);
		cli_json_str(&j, "section", p->section);
		cli_json_str(&j, "hook", hook_of(p));
		cli_json_uint(&j, "insns", p->insn_cnt);
		cli_json_array(&j, "functions");
		for (size_t k = 0; k < p->func_cnt; k++)
			cli_json_str(&j, NULL, p->funcs[k].name);
		cli_json_end(&j);
		cli_json_end(&j);
	}
	cli_json_end(&j);
	cli_json_array(&j, "maps");
	for (size_t i = 0; i < o->map_cnt; i++) {
		const struct nb_map_def *m = &o->maps[i];
		char tb[32];
		cli_json_object(&j, NULL);
		cli_json_str(&j, "name", m->name);
		cli_json_str(&j, "type", map_type_name(m->type, tb, sizeof(tb)));
		cli_json_uint(&j, "type_id", m->type);
		cli_json_bool(&j, "supported", map_type_supported(m->type));
		cli_json_str(&j, "origin", origin_name(m->origin));
		cli_json_uint(&j, "key_size", m->key_size);
		cli_json_uint(&j, "value_size", m->value_size);
		cli_json_uint(&j, "max_entries", m->max_entries);
		cli_json_uint(&j, "flags", m->map_flags);
		cli_json_bool(&j, "pinned", m->pinning == 1);
		cli_json_uint(&j, "numa_node", m->numa_node);
		cli_json_uint(&j, "map_extra", m->map_extra);
		cli_json_end(&j);
	}
	cli_json_end(&j);
	cli_json_array(&j, "externs");
	for (size_t i = 0; i < o->extern_cnt; i++) {
		cli_json_object(&j, NULL);
		cli_json_str(&j, "name", o->externs[i].name);
		cli_json_str(&j, "kind", o->externs[i].is_func ? "function" : "variable");
		cli_json_end(&j);
	}
	cli_json_end(&j);
	cli_json_end(&j);
	cli_json_finish(&j);
}

static int col_width(int w, const char *s)
{
	size_t n = strlen(s);
	return n > (size_t)w ? (n > 4096 ? 4096 : (int)n) : w;
}

static void print_text(const struct nb_object *o)
{
	printf("object:  %s\n", o->name);
	printf("license: %s\n", o->license[0] ? o->license : "(none)");
	printf("BTF:     %s\n", o->has_btf ? "yes" : "no");
	printf("BTF.ext: %s\n", o->has_btf_ext ? "yes" : "no");
	/* columns as wide as their longest entry: long names never shift the next column */
	int ws = 16, wn = 24, wm = 24;
	for (size_t i = 0; i < o->prog_cnt; i++) {
		ws = col_width(ws, o->progs[i].section);
		wn = col_width(wn, o->progs[i].name);
	}
	for (size_t i = 0; i < o->map_cnt; i++)
		wm = col_width(wm, o->maps[i].name);
	printf("\nprograms (%zu):\n", o->prog_cnt);
	printf("  %-*s %-*s %6s  %s\n", ws, "section", wn, "name", "insns", "hook");
	for (size_t i = 0; i < o->prog_cnt; i++) {
		const struct nb_program *p = &o->progs[i];
		const char *h = hook_of(p);
		printf("  %-*s %-*s %6zu  %s\n", ws, p->section, wn, p->name, p->insn_cnt,
		       h ? h : "(none)");
	}
	printf("\nmaps (%zu):\n", o->map_cnt);
	printf("  %-*s %-16s %5s %6s %11s  %s\n", wm, "name", "type", "key", "value", "max_entries",
	       "flags");
	size_t kernel_only = 0, ignored = 0;
	for (size_t i = 0; i < o->map_cnt; i++) {
		const struct nb_map_def *m = &o->maps[i];
		char tb[32];
		bool ok = map_type_supported(m->type);
		kernel_only += !ok;
		ignored += m->numa_node || m->map_extra;
		printf("  %-*s %-16s %5u %6u %11u  0x%x%s%s%s\n", wm, m->name,
		       map_type_name(m->type, tb, sizeof(tb)), m->key_size, m->value_size,
		       m->max_entries, m->map_flags, m->pinning == 1 ? " pinned" : "",
		       ok ? "" : " (kernel-only)", m->numa_node || m->map_extra ? " (*)" : "");
	}
	if (o->extern_cnt) {
		printf("\nexterns (%zu):\n", o->extern_cnt);
		int wx = 24;
		for (size_t i = 0; i < o->extern_cnt; i++)
			wx = col_width(wx, o->externs[i].name);
		for (size_t i = 0; i < o->extern_cnt; i++)
			printf("  %-*s %s\n", wx, o->externs[i].name,
			       o->externs[i].is_func ? "function (kfunc)" : "variable (.kconfig/.ksyms)");
		printf("\nExtern symbols are resolved by the kernel's loader: ncclbpf can inspect "
		       "this object but refuses to load it.\n");
	}
	if (kernel_only)
		printf("\n(kernel-only) map types exist only in the kernel: ncclbpf can inspect this "
		       "object but refuses to load it.\n");
	if (ignored)
		printf("\n(*) numa_node / map_extra are set: they mean nothing here (no NUMA "
		       "placement, no bloom filter or arena maps) and are ignored.\n");
}

static int cmd_info(int argc, char **argv)
{
	bool json = false;
	const char *path = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json"))
			json = true;
		else if (argv[i][0] == '-' && argv[i][1])
			return cli_usage_error("info", "unknown option '%s'", argv[i]);
		else if (path)
			return cli_usage_error("info", "takes one object (got '%s' and '%s')", path,
					       argv[i]);
		else
			path = argv[i];
	}
	if (!path)
		return cli_usage_error("info", "no object given");
	char err[1024];
	struct nb_object *o = NULL;
	if (loader_open_file_flags(path, NB_LOADER_INSPECT, &o, err, sizeof(err)) < 0) {
		if (json) { /* the document says why, as `verify --json` does */
			struct cli_json j;
			cli_json_init(&j, stdout);
			cli_json_object(&j, NULL);
			cli_json_str(&j, "schema", "ncclbpf.info/1");
			cli_json_str(&j, "file", path);
			cli_json_str(&j, "error", err);
			cli_json_end(&j);
			cli_json_finish(&j);
		} else {
			fprintf(stderr, "%s: error: %s\n", path, err);
		}
		return CLI_EXIT_REFUSED;
	}
	if (json)
		print_json(path, o);
	else
		print_text(o);
	loader_close(o);
	return CLI_EXIT_OK;
}

NCCLBPF_CLI_COMMAND(info, .name = "info", .run = cmd_info, .synopsis = "[--json] OBJ",
		    .summary = "programs, hooks, maps, BTF and license of an object",
		    .help = "Lists what an eBPF object contains, as the loader reads it: every "
			    "program with its\nsection, instruction count and the hook its "
			    "section names; every map with its\nkernel type, key/value size, "
			    "max_entries and flags; BTF and license. Creates\nnothing, so objects "
			    "built for the kernel (perf event arrays, ring buffers, ...)\ncan be "
			    "inspected too: such maps are marked (kernel-only), extern symbols are\nlisted.\n"
			    "\n"
			    "options:\n"
			    "  --json   one JSON document (below) instead of the table\n"
			    "\n"
			    "json (schema \"ncclbpf.info/1\"):\n"
			    "  {\"schema\", \"file\", \"license\": strings, \"btf\", \"btf_ext\": "
			    "bools,\n"
			    "   \"error\": string (only when the object cannot be read: then "
			    "\"schema\" and\n   \"file\" are the only other members; exit "
			    "status 1),\n"
			    "   \"programs\": [{\"name\", \"section\": strings, \"hook\": string or "
			    "null,\n"
			    "                 \"insns\": number, \"functions\": [names]}],\n"
			    "   \"maps\": [{\"name\", \"type\" (kernel name), \"origin\" (btf, "
			    "legacy, rodata,\n"
			    "             data, bss): strings, \"type_id\", \"key_size\", "
			    "\"value_size\",\n"
			    "             \"max_entries\", \"flags\", \"numa_node\", \"map_extra\": "
			    "numbers,\n"
			    "             \"supported\", \"pinned\": bools}],\n"
			    "   \"externs\": [{\"name\", \"kind\" (function, variable): strings}] "
			    "(symbols only\n   the kernel's loader resolves: .kconfig, .ksyms, "
			    "kfuncs)}\n");

/* `ncclbpf ctl`: talks to running processes through their control sockets
 * (src/runtime/control.h, docs/control.md).
 *
 *   ncclbpf ctl list [--json]
 *   ncclbpf ctl PID|--all status [--json]
 *   ncclbpf ctl PID|--all maps [--json]
 *   ncclbpf ctl PID|--all dump MAP [--json]
 *   ncclbpf ctl PID|--all update MAP KEY VALUE
 *   ncclbpf ctl PID|--all reload OBJ[:prog][,OBJ...] [--hook H] [--force]
 *   ncclbpf ctl PID|--all detach [--hook H] [--force]
 * Options: --dir DIR (the control directory; default as the library's), --timeout SEC.
 * Exit status: 0 done, 1 a process answered with an error, 2 usage, 3 no such process /
 * not reachable. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "runtime/control.h"
#include "runtime/control_proto.h"
#include "tools/cli.h"

int cmd_ctl(int argc, char **argv);

NCCLBPF_CLI_COMMAND(ctl, .name = "ctl", .run = cmd_ctl,
		    .synopsis = "list | PID|--all status|maps|dump|update|reload|detach ...",
		    .summary = "talk to running jobs: status, maps, hot reload (docs/control.md)",
		    .help =
		    "ncclbpf ctl list [--json]\n"
		    "ncclbpf ctl PID|--all status [--json]\n"
		    "ncclbpf ctl PID|--all maps [--json]\n"
		    "ncclbpf ctl PID|--all dump MAP [--json]\n"
		    "ncclbpf ctl PID|--all update MAP KEY VALUE\n"
		    "ncclbpf ctl PID|--all reload OBJ[:prog][,OBJ...] [--hook HOOK] [--force]\n"
		    "ncclbpf ctl PID|--all detach [--hook HOOK] [--force]\n"
		    "\n"
		    "Talks to the control socket of running processes that loaded libncclbpf.so\n"
		    "(NCCLBPF_CONTROL_DIR/<pid>.sock). list removes stale sockets of dead processes.\n"
		    "\n"
		    "options:\n"
		    "  --all          every live process of the control directory\n"
		    "  --dir DIR      control directory (default: NCCLBPF_CONTROL_DIR, else\n"
		    "                 $XDG_RUNTIME_DIR/ncclbpf, else $TMPDIR/ncclbpf-UID or /tmp/ncclbpf-UID)\n"
		    "  --timeout SEC  reply timeout (default 60)\n"
		    "  --hook HOOK    reload/detach one hook (tuner, tuner/chunk, profiler, net, env)\n"
		    "  --force        replace tuner programs of a multi-rank job without the agreement\n"
		    "                 layer (each rank switches at its next collective: may deadlock NCCL)\n"
		    "  --json         the process's reply as JSON (--all: an array of {pid, ok, reply})\n"
		    "  KEY, VALUE     decimal or 0x-hex integer (little-endian, must fit the map's size),\n"
		    "                 or hex:BYTES with exactly the map's size\n"
		    "\n"
		    "Agreed maps (NCCLBPF_F_AGREED): dump shows each communicator's published\n"
		    "version, the one its tuner reads; update is refused (every rank must read the\n"
		    "same bytes: the profiler programs' contributions are what changes them).\n"
		    "\n"
		    "exit status: 0 done; 1 a process answered with an error (the message on stderr;\n"
		    "nothing is reported done that was refused); 2 usage (also a PID that is not a\n"
		    "positive process id); 3 no such process or no control socket reachable (--all:\n"
		    "none live). --all: the worst of the processes' statuses.\n"
		    "\n"
		    "json (--json; every document has \"schema\"):\n"
		    "  list: {\"schema\": \"ncclbpf.ctl.list/1\", \"processes\": [hello replies]}\n"
		    "  --all CMD: {\"schema\": \"ncclbpf.ctl.all/1\", \"command\", \"replies\":\n"
		    "    [{\"pid\", \"ok\": bool, \"reply\": that process's document}]}\n"
		    "  hello (list's entries): {\"schema\": \"ncclbpf.ctl.hello/1\", \"pid\", \"uid\",\n"
		    "    \"host\", \"socket\", \"communicators\", \"programs\": [labels]}\n"
		    "  status: {\"schema\": \"ncclbpf.ctl.status/1\", \"pid\", \"uid\", \"host\",\n"
		    "    \"protocol\", \"version\", \"reloads\", \"reload_failures\", \"retired_pending\",\n"
		    "    \"objects_live\", \"activation_pending\", \"hooks\": [{\"hook\", \"version\",\n"
		    "    \"gated\", \"faults\", \"programs\": [{\"label\", \"object\", \"name\", \"mode\",\n"
		    "    \"insns\", \"loaded_at\", \"version\", \"role\"}]}], \"communicators\": [{\"kind\",\n"
		    "    \"comm\", \"ranks\", \"nodes\", \"abi\", \"decisions\", \"changed\", \"faults\",\n"
		    "    \"clamps\", \"chain_version\", \"general_path\"}], then one object per section\n"
		    "    (\"control\", \"profiler\", \"agreement\", ...) of key: value}\n"
		    "  maps: {\"schema\": \"ncclbpf.ctl.maps/1\", \"maps\": [{\"object\", \"name\",\n"
		    "    \"type\", \"key_size\", \"value_size\", \"max_entries\", \"flags\", \"entries\",\n"
		    "    \"storage\": own|shared|pinned|agreed, \"readonly\"}]}\n"
		    "  dump: {\"schema\": \"ncclbpf.ctl.dump/1\", \"map\", \"type\", \"key_size\",\n"
		    "    \"value_size\", \"entries\": [{\"key\", \"value\": hex, \"key_int\", \"value_int\"\n"
		    "    (sizes <= 8)}], \"count\"}; an agreed map: {\"schema\", \"map\", \"agreed\": true,\n"
		    "    \"key_size\", \"value_size\", \"communicators\": [{\"comm\", \"version\",\n"
		    "    \"activation_seq\", \"fallback\", \"entries\": [...]}]}\n"
		    "  update: {\"schema\": \"ncclbpf.ctl.update/1\", \"ok\": true, \"map\", \"updated\"}\n"
		    "  reload, detach: {\"schema\": \"ncclbpf.ctl.reload/1\" (detach/1), \"ok\",\n"
		    "    \"status\": 0 or -errno, \"programs\", \"message\"}\n"
		    "  any other error: {\"schema\": \"ncclbpf.ctl.error/1\", \"ok\": false, \"status\",\n"
		    "    \"message\"}\n");

struct ctl_opts {
	char dir[PATH_MAX];
	bool json, all, force;
	const char *hook;
	int timeout_ms;
	long pid;
	const char *cmd;
	const char *args[4];
	int nargs;
};

static void ctl_usage(FILE *f)
{
	fprintf(f,
		"usage: ncclbpf ctl list [--json]\n"
		"       ncclbpf ctl PID|--all status [--json]\n"
		"       ncclbpf ctl PID|--all maps [--json]\n"
		"       ncclbpf ctl PID|--all dump MAP [--json]\n"
		"       ncclbpf ctl PID|--all update MAP KEY VALUE\n"
		"       ncclbpf ctl PID|--all reload OBJ[:prog][,OBJ...] [--hook HOOK] [--force]\n"
		"       ncclbpf ctl PID|--all detach [--hook HOOK] [--force]\n"
		"  --all          every live process on this node\n"
		"  --dir DIR      control directory (default: NCCLBPF_CONTROL_DIR, else\n"
		"                 $XDG_RUNTIME_DIR/ncclbpf, else $TMPDIR/ncclbpf-UID or /tmp/ncclbpf-UID)\n"
		"  --timeout SEC  reply timeout (default 60)\n"
		"  --force        replace tuner programs of a multi-rank job without the agreement\n"
		"                 layer (each rank switches at its next collective: may deadlock NCCL)\n"
		"  KEY, VALUE     decimal or 0x-hex integer (little-endian, must fit the map's size),\n"
		"                 or hex:BYTES with exactly the map's size\n"
		"exit status: 0 done, 1 the process answered with an error, 2 usage, 3 not reachable\n");
}

static const struct {
	const char *name;
	unsigned op;
	int min, max;
} ctl_cmds[] = {
	{"status", NBC_OP_STATUS, 0, 0}, {"maps", NBC_OP_MAPS, 0, 0},
	{"dump", NBC_OP_DUMP, 1, 1},     {"update", NBC_OP_UPDATE, 3, 3},
	{"reload", NBC_OP_RELOAD, 1, 1}, {"detach", NBC_OP_DETACH, 0, 0},
};

/* Relative object paths are resolved here: the target process has another cwd. */
static char *absolute_spec(const char *spec)
{
	size_t cap = strlen(spec) * 2 + PATH_MAX * 4 + 1, n = 0;
	char *out = malloc(cap), *copy = strdup(spec), *save = NULL;
	if (!out || !copy) {
		free(out);
		free(copy);
		return NULL;
	}
	out[0] = '\0';
	for (char *e = strtok_r(copy, ",", &save); e; e = strtok_r(NULL, ",", &save)) {
		while (*e == ' ')
			e++;
		char *prog = strrchr(e, ':');
		if (prog && !strchr(prog, '/'))
			*prog++ = '\0';
		else
			prog = NULL;
		char real[PATH_MAX];
		const char *file = realpath(e, real) ? real : e;
		int w = snprintf(out + n, cap - n, "%s%s%s%s", n ? "," : "", file, prog ? ":" : "",
				 prog ? prog : "");
		if (w < 0 || (size_t)w >= cap - n) {
			free(out);
			free(copy);
			return NULL;
		}
		n += (size_t)w;
	}
	free(copy);
	return out;
}

static void sock_path(const struct ctl_opts *o, long pid, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%ld.sock", o->dir, pid);
}

/* Lists the pids with a socket in the directory (sorted). */
static size_t scan_pids(const struct ctl_opts *o, long **pids)
{
	DIR *d = opendir(o->dir);
	size_t n = 0, cap = 0;
	*pids = NULL;
	if (!d)
		return 0;
	for (struct dirent *e; (e = readdir(d));) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (pid <= 0 || strcmp(end, ".sock"))
			continue;
		if (n == cap) {
			long *p = realloc(*pids, (cap = cap ? cap * 2 : 16) * sizeof(long));
			if (!p)
				break;
			*pids = p;
		}
		(*pids)[n++] = pid;
	}
	closedir(d);
	for (size_t i = 1; i < n; i++) /* insertion sort: a handful of processes */
		for (size_t j = i; j > 0 && (*pids)[j - 1] > (*pids)[j]; j--) {
			long t = (*pids)[j];
			(*pids)[j] = (*pids)[j - 1];
			(*pids)[j - 1] = t;
		}
	return n;
}

/* One request to one process. Returns 0 (reply printed), 1 error reply, 3 unreachable
 * (a stale socket of a dead process is removed). */
static int call_one(const struct ctl_opts *o, long pid, unsigned op, unsigned argc,
		    const char *const *argv, bool quiet_stale, char **reply_out)
{
	char path[PATH_MAX + 32], err[PATH_MAX + 128];
	char *reply = NULL;
	int status = 0;
	sock_path(o, pid, path, sizeof(path));
	unsigned flags = (o->json ? NBC_FLAG_JSON : 0) | (o->force ? NBC_FLAG_FORCE : 0);
	int rc = runtime_control_call(path, op, flags, argc, argv,
				      o->timeout_ms, &status, &reply, NULL, err, sizeof(err));
	if (rc == -ECONNREFUSED || rc == -ENOENT) {
		bool dead = kill((pid_t)pid, 0) != 0 && errno == ESRCH;
		if (rc == -ECONNREFUSED && dead && unlink(path) == 0)
			fprintf(stderr, "ncclbpf ctl: removed stale socket %s (process %ld is gone)\n",
				path, pid);
		else if (!quiet_stale)
			fprintf(stderr, "ncclbpf ctl: process %ld: no control socket at %s%s\n", pid,
				path, dead ? " (no such process)" : "");
		return 3;
	}
	if (rc < 0) {
		fprintf(stderr, "ncclbpf ctl: process %ld: %s\n", pid, err);
		return 3;
	}
	if (reply_out) {
		*reply_out = reply;
	} else {
		FILE *f = status < 0 ? stderr : stdout;
		fputs(reply, f);
		free(reply);
	}
	return status < 0 ? 1 : 0;
}

static int ctl_list(const struct ctl_opts *o)
{
	long *pids;
	size_t n = scan_pids(o, &pids), shown = 0;
	if (!o->json)
		printf("%-8s %-20s %5s  %s\n", "PID", "HOST", "COMMS", "PROGRAMS");
	else
		printf("{\"schema\":\"ncclbpf.ctl.list/1\",\"processes\":[");
	for (size_t i = 0; i < n; i++) {
		char *reply = NULL;
		if (call_one(o, pids[i], NBC_OP_HELLO, 0, NULL, true, &reply) != 0) {
			free(reply);
			continue;
		}
		size_t len = strlen(reply);
		while (len && reply[len - 1] == '\n')
			reply[--len] = '\0';
		printf(o->json ? "%s%s" : "%.0s%s\n", shown ? "," : "", reply);
		shown++;
		free(reply);
	}
	if (o->json)
		printf("]}\n");
	free(pids);
	return 0;
}

static int parse_args(int argc, char **argv, struct ctl_opts *o)
{
	o->timeout_ms = 60000;
	o->pid = -1;
	if (runtime_control_dir(o->dir, sizeof(o->dir)) < 0)
		o->dir[0] = '\0';
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--json")) {
			o->json = true;
		} else if (!strcmp(a, "--all")) {
			o->all = true;
		} else if (!strcmp(a, "--force")) {
			o->force = true;
		} else if (!strcmp(a, "--hook") || !strcmp(a, "--dir") || !strcmp(a, "--timeout")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ncclbpf ctl: %s needs a value\n", a);
				return -1;
			}
			const char *v = argv[++i];
			if (!strcmp(a, "--hook")) {
				o->hook = v;
			} else if (!strcmp(a, "--dir")) {
				/* resolved as the library resolves NCCLBPF_CONTROL_DIR */
				if (!*v || runtime_control_dir_resolve(v, o->dir, sizeof(o->dir)) < 0) {
					fprintf(stderr, "ncclbpf ctl: bad --dir '%s'\n", v);
					return -1;
				}
			} else if ((o->timeout_ms = atoi(v) * 1000) <= 0) {
				fprintf(stderr, "ncclbpf ctl: bad --timeout %s\n", v);
				return -1;
			}
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			ctl_usage(stdout);
			exit(0);
		} else if (a[0] == '-' && a[1] && !(a[1] >= '0' && a[1] <= '9')) {
			fprintf(stderr, "ncclbpf ctl: unknown option %s\n", a);
			return -1;
		} else if (!o->cmd && o->pid < 0 && !o->all && strcmp(a, "list")) {
			char *end;
			errno = 0;
			long pid = strtol(a, &end, 10);
			if (*end || pid <= 0 || errno == ERANGE || pid > INT_MAX) {
				fprintf(stderr, "ncclbpf ctl: '%s' is not a process id (or list, --all)\n",
					a);
				return -1;
			}
			o->pid = pid;
		} else if (!o->cmd) {
			o->cmd = a;
		} else if (o->nargs < 4) {
			o->args[o->nargs++] = a;
		} else {
			fprintf(stderr, "ncclbpf ctl: too many arguments\n");
			return -1;
		}
	}
	if (!o->dir[0]) {
		fprintf(stderr, "ncclbpf ctl: control directory name too long\n");
		return -1;
	}
	return 0;
}

int cmd_ctl(int argc, char **argv)
{
	struct ctl_opts o = {0};
	if (argc < 2) {
		ctl_usage(stderr);
		return 2;
	}
	if (parse_args(argc, argv, &o) < 0)
		return 2;
	if (o.cmd && !strcmp(o.cmd, "list") && o.pid < 0 && !o.all && !o.nargs)
		return ctl_list(&o);
	if (!o.cmd || (o.pid < 0) == !o.all) {
		fprintf(stderr, "ncclbpf ctl: give a PID or --all, and a command\n");
		ctl_usage(stderr);
		return 2;
	}
	size_t ci;
	for (ci = 0; ci < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); ci++)
		if (!strcmp(o.cmd, ctl_cmds[ci].name))
			break;
	if (ci == sizeof(ctl_cmds) / sizeof(ctl_cmds[0])) {
		fprintf(stderr, "ncclbpf ctl: unknown command '%s'\n", o.cmd);
		ctl_usage(stderr);
		return 2;
	}
	if (o.nargs < ctl_cmds[ci].min || o.nargs > ctl_cmds[ci].max) {
		fprintf(stderr, "ncclbpf ctl: %s takes %d argument(s)\n", o.cmd, ctl_cmds[ci].max);
		return 2;
	}
	unsigned op = ctl_cmds[ci].op;
	if ((o.hook || o.force) && op != NBC_OP_RELOAD && op != NBC_OP_DETACH) {
		fprintf(stderr, "ncclbpf ctl: --hook and --force apply to reload and detach\n");
		return 2;
	}
	const char *args[4];
	unsigned na = 0;
	char *spec = NULL;
	for (int i = 0; i < o.nargs; i++)
		args[na++] = o.args[i];
	if (op == NBC_OP_RELOAD) {
		spec = absolute_spec(o.args[0]);
		if (!spec) {
			fprintf(stderr, "ncclbpf ctl: policy spec too long\n");
			return 2;
		}
		args[0] = spec;
	}
	if (o.hook)
		args[na++] = o.hook;
	int rc = 0;
	if (!o.all) {
		rc = call_one(&o, o.pid, op, na, args, false, NULL);
	} else {
		long *pids;
		size_t n = scan_pids(&o, &pids), done = 0;
		if (o.json)
			printf("{\"schema\":\"ncclbpf.ctl.all/1\",\"command\":\"%s\",\"replies\":[",
			       ctl_cmds[ci].name);
		for (size_t i = 0; i < n; i++) {
			char *reply = NULL;
			int r = call_one(&o, pids[i], op, na, args, true, &reply);
			if (r == 3)
				continue; /* stale (removed) or gone meanwhile */
			size_t len = strlen(reply);
			while (len && reply[len - 1] == '\n')
				reply[--len] = '\0';
			if (o.json)
				printf("%s{\"pid\":%ld,\"ok\":%s,\"reply\":%s}", done ? "," : "",
				       pids[i], r ? "false" : "true", reply);
			else
				fprintf(r ? stderr : stdout, "== pid %ld\n%s\n", pids[i], reply);
			free(reply);
			if (r > rc)
				rc = r;
			done++;
		}
		if (o.json)
			printf("]}\n");
		free(pids);
		if (!done) {
			fprintf(stderr, "ncclbpf ctl: no live process in %s\n", o.dir);
			rc = 3;
		}
	}
	free(spec);
	return rc;
}

/* Parses `llvm-objdump -t` and `llvm-objdump -d -r` output (see objdump_ref.h). */
#include "objdump_ref.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static FILE *run(const char *objdump, const char *args, const char *obj)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "'%s' %s '%s' 2>/dev/null", objdump, args, obj);
	return popen(cmd, "r");
}

static void chomp(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
}

/* "0000000000000018 l     F .text\t0000000000000040 mid" */
static int parse_syms(const char *objdump, const char *obj, struct od_ref *r)
{
	FILE *f = run(objdump, "-t", obj);
	char line[512];
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		chomp(line);
		char *tab = strchr(line, '\t');
		if (!tab || strlen(line) < 26 || !isxdigit((unsigned char)line[0]))
			continue;
		if (r->nsyms == OD_MAX_SYMS)
			break;
		struct od_sym *s = &r->syms[r->nsyms];
		s->value = strtoull(line, NULL, 16);
		s->kind = line[23];
		char *sec = tab;
		while (sec > line && sec[-1] != ' ')
			sec--;
		snprintf(s->sec, sizeof(s->sec), "%.*s", (int)(tab - sec), sec);
		char *end;
		s->size = strtoull(tab + 1, &end, 16);
		while (*end == ' ')
			end++;
		snprintf(s->name, sizeof(s->name), "%s", end);
		r->nsyms++;
	}
	return pclose(f) == 0 ? 0 : -1;
}

static struct od_sec *grow(struct od_sec *s, size_t slots)
{
	if (slots <= s->slots)
		return s;
	s->bytes = realloc(s->bytes, slots * 8);
	s->reloc = realloc(s->reloc, slots * sizeof(*s->reloc));
	memset(s->bytes + s->slots * 8, 0, (slots - s->slots) * 8);
	memset(s->reloc + s->slots, 0, (slots - s->slots) * sizeof(*s->reloc));
	s->slots = slots;
	return s;
}

static int parse_disasm(const char *objdump, const char *obj, struct od_ref *r)
{
	FILE *f = run(objdump, "-d -r", obj);
	char line[512];
	struct od_sec *cur = NULL;
	size_t last_slot = 0;
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		chomp(line);
		if (strncmp(line, "Disassembly of section ", 23) == 0) {
			if (r->nsecs == OD_MAX_SECS)
				break;
			cur = &r->secs[r->nsecs++];
			snprintf(cur->name, sizeof(cur->name), "%.*s", (int)(strlen(line + 23) - 1),
				 line + 23);
			continue;
		}
		if (!cur)
			continue;
		char *rel = strstr(line, "R_BPF_");
		if (line[0] == '\t' && rel) {
			uint64_t off = strtoull(line + 2, NULL, 16);
			char *sym = strchr(rel, '\t');
			if (sym && off / 8 < cur->slots)
				snprintf(cur->reloc[off / 8], 64, "%s", sym + 1);
			continue;
		}
		char *p = line;
		while (*p == ' ')
			p++;
		char *colon = strchr(p, ':');
		if (!isdigit((unsigned char)*p) || !colon || colon[1] != '\t')
			continue;
		size_t idx = strtoull(p, NULL, 10);
		uint8_t b[16];
		int n = 0;
		char *q = colon + 2;
		while (n < 16 && isxdigit((unsigned char)q[0]) && isxdigit((unsigned char)q[1]) &&
		       (q[2] == ' ' || q[2] == '\t')) {
			b[n++] = (uint8_t)strtoul((char[]){q[0], q[1], 0}, NULL, 16);
			q += 3;
		}
		if (n != 8 && n != 16)
			continue;
		grow(cur, idx + n / 8);
		memcpy(cur->bytes + idx * 8, b, n);
		last_slot = idx;
	}
	(void)last_slot;
	return pclose(f) == 0 ? 0 : -1;
}

int od_load(const char *objdump, const char *obj, struct od_ref *out)
{
	memset(out, 0, sizeof(*out));
	if (parse_syms(objdump, obj, out) || parse_disasm(objdump, obj, out))
		return -1;
	return out->nsyms && out->nsecs ? 0 : -1;
}

void od_free(struct od_ref *r)
{
	for (int i = 0; i < r->nsecs; i++) {
		free(r->secs[i].bytes);
		free(r->secs[i].reloc);
	}
}

const struct od_sym *od_sym(const struct od_ref *r, const char *name)
{
	for (int i = 0; i < r->nsyms; i++)
		if (strcmp(r->syms[i].name, name) == 0)
			return &r->syms[i];
	return NULL;
}

const struct od_sec *od_sec(const struct od_ref *r, const char *name)
{
	for (int i = 0; i < r->nsecs; i++)
		if (strcmp(r->secs[i].name, name) == 0)
			return &r->secs[i];
	return NULL;
}

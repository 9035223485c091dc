/* Everything the runtime refuses when it loads an object, in one place (runtime.h, "load
 * checks"): the object's maps (creatable here, pinned ones compatible with what the process
 * already shares, agreed-map slots) and each program's instructions, references and
 * verification. The runtime calls these before it creates or links anything; `ncclbpf
 * verify` calls the same functions against a model of one process, so that verify accepts
 * exactly what loading the same objects, in the same order, into one process would. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "maps/map.h"
#include "runtime/runtime.h"
#include "verifier/verifier.h"

struct sim_pin {
	struct nb_map_spec spec;
	char name[NB_NAME_MAX];
	char owner[160];
};

struct runtime_load_sim {
	struct sim_pin *pins;
	size_t pin_cnt;
	unsigned agreed_free;
};

struct runtime_load_sim *runtime_load_sim_new(void)
{
	struct runtime_load_sim *sim = calloc(1, sizeof(*sim));
	if (sim)
		sim->agreed_free = NB_MAP_AGREED_SLOTS;
	return sim;
}

void runtime_load_sim_free(struct runtime_load_sim *sim)
{
	if (!sim)
		return;
	free(sim->pins);
	free(sim);
}

static const struct sim_pin *sim_find(const struct runtime_load_sim *sim, const char *name)
{
	for (size_t i = 0; i < sim->pin_cnt; i++)
		if (!strcmp(sim->pins[i].name, name))
			return &sim->pins[i];
	return NULL;
}

static bool is_agreed(const struct nb_map_def *d)
{
	return (d->map_flags & NB_MAP_F_AGREED) != 0;
}

void runtime_load_sim_hold(struct runtime_load_sim *sim, const struct nb_object *nbo)
{
	for (size_t i = 0; sim && i < nbo->map_cnt; i++)
		if (is_agreed(&nbo->maps[i]) && nbo->maps[i].pinning != 1 && sim->agreed_free)
			sim->agreed_free--;
}

void runtime_map_spec_of(const struct nb_map_def *d, struct nb_map_spec *spec)
{
	*spec = (struct nb_map_spec){
		.name = d->name,
		.type = d->type,
		.key_size = d->key_size,
		.value_size = d->value_size,
		.max_entries = d->max_entries,
		.map_flags = d->map_flags,
	};
	if (d->origin == NB_MAP_ORIGIN_RODATA)
		spec->map_flags |= NB_MAP_F_RDONLY_PROG;
}

/* The declaration a pinned map of this name must match, if any: an object's earlier one
 * (model or live registry), else the plugin's own. */
static bool pinned_before(const struct runtime_load_sim *sim, const char *name,
			  struct nb_map_spec *have, char *owner, size_t ownerlen)
{
	if (sim) {
		const struct sim_pin *p = sim_find(sim, name);
		if (p) {
			*have = p->spec;
			snprintf(owner, ownerlen, "%s", p->owner);
			return true;
		}
	} else if (runtime_pinned_find(name, have, owner, ownerlen)) {
		return true;
	}
	const struct nb_map_spec *b = runtime_builtin_pinned(name);
	if (!b)
		return false;
	*have = *b;
	snprintf(owner, ownerlen, "the plugin (built-in map)");
	return true;
}

/* Records the object's new pinned maps in the model: they outlive the object. */
static int sim_add_pins(struct runtime_load_sim *sim, const struct nb_object *nbo,
			const char *owner, char *err, size_t errlen)
{
	for (size_t i = 0; i < nbo->map_cnt; i++) {
		const struct nb_map_def *d = &nbo->maps[i];
		if (d->pinning != 1 || sim_find(sim, d->name))
			continue;
		struct sim_pin *p = realloc(sim->pins, (sim->pin_cnt + 1) * sizeof(*p));
		if (!p) {
			snprintf(err, errlen, "out of memory");
			return -ENOMEM;
		}
		sim->pins = p;
		p = &sim->pins[sim->pin_cnt++];
		snprintf(p->name, sizeof(p->name), "%s", d->name);
		snprintf(p->owner, sizeof(p->owner), "object '%s'", owner);
		runtime_map_spec_of(d, &p->spec);
		p->spec.name = p->name;
		if (is_agreed(d) && !runtime_builtin_pinned(d->name) && sim->agreed_free)
			sim->agreed_free--;
	}
	return 0;
}

int runtime_check_maps(const struct nb_object *nbo, const char *owner,
		       struct runtime_load_sim *sim, char *err, size_t errlen)
{
	char who[160], why[768];
	unsigned agreed_new = 0;

	snprintf(who, sizeof(who), "object '%s'", owner);
	for (size_t i = 0; i < nbo->map_cnt; i++) {
		const struct nb_map_def *d = &nbo->maps[i];
		struct nb_map_spec spec, have;
		char have_owner[160];
		runtime_map_spec_of(d, &spec);
		int rc = map_spec_check(&spec, why, sizeof(why));
		if (rc) {
			snprintf(err, errlen, "%s [E-MAP]", why); /* map_spec_check names the map */
			return rc;
		}
		if (d->pinning > 1) {
			snprintf(err, errlen, "map '%s': pinning %u unknown (0 = private, 1 = "
				 "LIBBPF_PIN_BY_NAME) [E-MAP]", d->name, d->pinning);
			return -EINVAL;
		}
		if (d->init_data && !map_spec_value_span(&spec)) {
			snprintf(err, errlen, "map '%s': initial data for a non-array map [E-MAP]",
				 d->name);
			return -EINVAL;
		}
		if (d->pinning == 1 &&
		    pinned_before(sim, d->name, &have, have_owner, sizeof(have_owner))) {
			if (runtime_pinned_conflict(&have, have_owner, &spec, who, why, sizeof(why))) {
				snprintf(err, errlen, "%s [E-MAP-SHARED]", why);
				return -EINVAL;
			}
			continue; /* binds to the existing map: no new slot */
		}
		agreed_new += is_agreed(d);
	}
	unsigned agreed_free = sim ? sim->agreed_free : map_agreed_slots_free();
	if (agreed_new > agreed_free) {
		snprintf(err, errlen, "%u agreed maps, but this process has %u of its %d agreed-map "
			 "slots left [E-MAP]", agreed_new, agreed_free, NB_MAP_AGREED_SLOTS);
		return -E2BIG;
	}
	return sim ? sim_add_pins(sim, nbo, owner, err, errlen) : 0;
}

/* What the link step resolves: map references (index in range, a value address only inside
 * an array map's entries) and function addresses (bpf_loop callbacks) inside the program. */
static int check_refs(const struct nb_object *nbo, const struct nb_program *p, char *err,
		      size_t errlen)
{
	for (size_t i = 0; i < p->insn_cnt; i++) {
		const struct bpf_insn *in = &p->insns[i];
		if (!isa_is_lddw(in))
			continue;
		if (i + 1 >= p->insn_cnt) {
			snprintf(err, errlen, "insn %zu: incomplete lddw [E-BAD-INSN]", i);
			return -EINVAL;
		}
		if (in->src_reg == BPF_PSEUDO_FUNC) {
			int64_t t = (int64_t)i + in->imm + 1;
			if (t < 0 || (uint64_t)t >= p->insn_cnt) {
				snprintf(err, errlen, "insn %zu: function address outside the program "
					 "[E-BAD-JUMP]", i);
				return -EINVAL;
			}
		} else if (in->src_reg == BPF_PSEUDO_MAP_FD || in->src_reg == BPF_PSEUDO_MAP_VALUE) {
			uint32_t idx = (uint32_t)in->imm;
			if (idx >= nbo->map_cnt) {
				snprintf(err, errlen, "insn %zu: map index %u out of range (%zu maps) "
					 "[E-BAD-INSN]", i, idx, nbo->map_cnt);
				return -EINVAL;
			}
			struct nb_map_spec spec;
			runtime_map_spec_of(&nbo->maps[idx], &spec);
			uint64_t span = map_spec_value_span(&spec);
			uint32_t off = (uint32_t)p->insns[i + 1].imm;
			if (in->src_reg == BPF_PSEUDO_MAP_VALUE && off >= span) {
				snprintf(err, errlen, "insn %zu: value reference %s+%u invalid (%s) "
					 "[E-BAD-INSN]", i, spec.name, off,
					 span ? "offset past the map's storage"
					      : "not an array map of this process");
				return -EINVAL;
			}
		} else if (in->src_reg != 0) {
			snprintf(err, errlen, "insn %zu: unsupported lddw pseudo form src_reg=%u "
				 "[E-BAD-INSN]", i, in->src_reg);
			return -EINVAL;
		}
		i++;
	}
	return 0;
}

int runtime_check_program(const struct nb_object *nbo, const struct nb_program *p,
			  const struct nb_hook_desc *h, const struct nb_verifier_opts *vopts,
			  struct nb_verifier_diag *diag, struct nb_verifier_stats *stats,
			  char *err, size_t errlen)
{
	int rc = isa_validate(p->insns, p->insn_cnt, err, errlen);
	if (rc < 0)
		return rc;
	rc = check_refs(nbo, p, err, errlen);
	if (rc < 0 || !vopts)
		return rc;
	/* the cost limit per run: the caller's (verify --max-insns), else NCCLBPF_MAX_INSNS,
	 * else the hook's; here so that `verify` and the runtime apply the same one */
	struct nb_verifier_opts o = *vopts;
	if (!o.max_insns)
		o.max_insns = runtime_env_max_insns(h);
	rc = verifier_check(p, nbo->maps, nbo->map_cnt, h, &o, diag, stats);
	if (rc == -EACCES)
		verifier_format_diag(diag, p, err, errlen);
	else if (rc)
		snprintf(err, errlen, "verifier failed on '%s': %s", p->name, strerror(-rc));
	return rc;
}

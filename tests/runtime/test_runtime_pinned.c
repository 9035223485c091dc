/* Maps pinned by name are shared between objects: a profiler object writes, a tuner object
 * reads; the built-in "ncclbpf_latency" map created by the host is the one the tuner's
 * NCCLBPF_LATENCY_MAP declaration binds to; incompatible redeclarations fail. */
#include <errno.h>

#include "maps/map.h"
#include "rt_test_common.h"
#include "test_util.h"

int main(void)
{
	char err[1024];
	uint64_t r0 = 0;

	rt_capture_logs();
	/* the host (profiler shim) creates the built-in map first */
	struct nb_map_spec lat_spec = {
		.name = "ncclbpf_latency",
		.type = NB_MAP_TYPE_HASH,
		.key_size = sizeof(struct ncclbpf_latency_key),
		.value_size = sizeof(struct ncclbpf_latency_stats),
		.max_entries = 4096,
	};
	struct nb_map *lat = runtime_pinned_map(&lat_spec, err, sizeof(err));
	CHECK(lat != NULL);
	CHECK(runtime_pinned_map(&lat_spec, err, sizeof(err)) == lat);
	struct nb_map_spec wrong = lat_spec;
	wrong.value_size = 8;
	CHECK(runtime_pinned_map(&wrong, err, sizeof(err)) == NULL);
	CHECK_STR_CONTAINS(err, "ncclbpf_latency");
	struct nb_map_spec unnamed = lat_spec;
	unnamed.name = "";
	CHECK(runtime_pinned_map(&unnamed, err, sizeof(err)) == NULL);

	struct ncclbpf_object *w = rt_open(RT_PROG("runtime_pin_writer"));
	struct ncclbpf_object *r = rt_open(RT_PROG("runtime_pin_reader"));
	struct ncclbpf_map *mw = ncclbpf_object_find_map(w, "rt_shared");
	struct ncclbpf_map *mr = ncclbpf_object_find_map(r, "rt_shared");
	CHECK(mw && mr && mw->map == mr->map);
	struct ncclbpf_map *ml = ncclbpf_object_find_map(r, "ncclbpf_latency");
	CHECK(ml && ml->map == lat);

	struct ncclbpf_program *rec = ncclbpf_object_find_program(w, "record");
	struct ncclbpf_program *rd = ncclbpf_object_find_program(r, "read_shared");
	CHECK(rt_prepare(rec, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == 0);
	CHECK(rt_prepare(rd, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == 0);

	struct ncclbpf_profiler_ctx pc = {.comm_id = 9, .gpu_ns = 33, .n_bytes = 4096};
	CHECK(ncclbpf_program_run(rec, &pc, sizeof(pc), &r0, err, sizeof(err)) == 0);
	struct ncclbpf_tuner_ctx tc;
	rt_tuner_ctx(&tc, 9, 4096, NCCLBPF_COLL_ALLREDUCE);
	CHECK(ncclbpf_program_run(rd, &tc, sizeof(tc), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(tc.n_channels, 33);
	CHECK_EQ_U64((uint32_t)r0, 0xffffffffu); /* -1: no latency sample yet (32-bit return) */

	/* a sample written by the host into the built-in map */
	struct ncclbpf_latency_key lk = {.comm_id = 9, .coll_type = NCCLBPF_COLL_ALLREDUCE,
					 .size_bucket = ncclbpf_size_bucket(4096)};
	struct ncclbpf_latency_stats ls = {.count = 5, .last_ns = 1000};
	CHECK(map_update(lat, &lk, &ls, NB_ANY) == 0);
	CHECK(ncclbpf_program_run(rd, &tc, sizeof(tc), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(r0, 5);

	/* a conflicting declaration of the same name does not open */
	struct ncclbpf_object *bad = NULL;
	CHECK(ncclbpf_object_open_file(RT_PROG("runtime_pin_conflict"), &bad, err, sizeof(err)) < 0);
	CHECK(bad == NULL);
	CHECK_STR_CONTAINS(err, "rt_shared");
	/* Regression (issue 14): the same map declared read-only to programs binds no more
	 * (matching was on type and sizes only): every attribute must match, and the message
	 * names both declarations */
	CHECK(ncclbpf_object_open_file(RT_PROG("runtime_pin_readonly"), &bad, err, sizeof(err)) < 0);
	CHECK(bad == NULL);
	CHECK_STR_CONTAINS(err, "runtime_pin_writer");
	CHECK_STR_CONTAINS(err, "runtime_pin_readonly");
	CHECK_STR_CONTAINS(err, "flags 0x80");

	/* the pin outlives the object that created it */
	ncclbpf_object_close(w);
	pc.gpu_ns = 44;
	w = rt_open(RT_PROG("runtime_pin_writer"));
	rec = ncclbpf_object_find_program(w, "record");
	CHECK(rt_prepare(rec, NCCLBPF_HOOK_AUTO, 0, 0, err, sizeof(err)) == 0);
	rt_tuner_ctx(&tc, 9, 4096, NCCLBPF_COLL_ALLREDUCE);
	CHECK(ncclbpf_program_run(rd, &tc, sizeof(tc), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(tc.n_channels, 33); /* value written by the first writer object */
	CHECK(ncclbpf_program_run(rec, &pc, sizeof(pc), &r0, err, sizeof(err)) == 0);
	CHECK(ncclbpf_program_run(rd, &tc, sizeof(tc), &r0, err, sizeof(err)) == 0);
	CHECK_EQ_U64(tc.n_channels, 44);
	ncclbpf_object_close(w);
	ncclbpf_object_close(r);
	TEST_DONE();
}

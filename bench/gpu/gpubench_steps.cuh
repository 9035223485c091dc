/* ncclbpf-gpubench: training-step workloads (--step), included by ncclbpf_gpubench.cu after
 * its per-rank state (kept apart for size).
 *
 * A step is a list of collectives (--step ar:16M,ag:4M,rs:4M,...) enqueued back to back on
 * the communicator's stream, optionally
 *  - `gap`: a fixed GPU busy time before each collective on the same stream (--gap-us G:
 *    the compute that produces the next gradient bucket), and/or
 *  - `overlap`: a compute kernel on another stream concurrent with the step's collectives
 *    (--overlap-us C, --overlap-blocks B: B thread blocks busy for C us); the next step
 *    starts when both are done.
 * The host waits for every step (a training loop's synchronization point) unless
 * --step-queued. Step time: CUDA events at the step's start and end on the communicator's
 * stream, the slowest rank's per step (max over ranks), written one row per step to
 * --steps-out FILE (workload,nnodes,nranks,config,policy,rep,step,time_us). Every distinct
 * collective of the step is checked afterwards (fresh buffers, NaN-poisoned output).
 */

/* Spins for ns nanoseconds of GPU time (%globaltimer: wall-clock ns, independent of the SM
 * clock). One block per call keeps the gap on the stream without occupying the GPU; the
 * overlap kernel uses several to compete for SMs as compute does. */
__global__ void gb_busy(unsigned long long ns)
{
	unsigned long long t0, t;
	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
	do {
		asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	} while (t - t0 < ns);
}

/* "ar:16M" -> (GB_ALLREDUCE, 16 MiB); returns 0 or -1. */
static int gb_step_item(const char *s, int *coll, size_t *bytes)
{
	static const struct { const char *name; int coll; } names[] = {
		{"ar", GB_ALLREDUCE}, {"ag", GB_ALLGATHER}, {"rs", GB_REDUCESCATTER}, {"bc", GB_BROADCAST},
		{"allreduce", GB_ALLREDUCE}, {"allgather", GB_ALLGATHER},
		{"reducescatter", GB_REDUCESCATTER}, {"broadcast", GB_BROADCAST},
	};
	const char *colon = strchr(s, ':');
	if (!colon)
		return -1;
	size_t len = (size_t)(colon - s);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strlen(names[i].name) == len && !strncasecmp(s, names[i].name, len)) {
			*coll = names[i].coll;
			*bytes = gb_parse_size(colon + 1);
			return *bytes ? 0 : -1;
		}
	return -1;
}

/* Parses --step into o->step_calls; returns 0 or -1 (message printed). */
static int gb_step_parse(struct gb_options *o, const char *spec)
{
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", spec);
	o->n_step_calls = 0;
	for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (o->n_step_calls == GB_MAX_STEP_CALLS) {
			fprintf(stderr, "gpubench: --step: at most %d collectives\n", GB_MAX_STEP_CALLS);
			return -1;
		}
		struct gb_step_call *c = &o->step_calls[o->n_step_calls];
		if (gb_step_item(t, &c->coll, &c->bytes)) {
			fprintf(stderr, "gpubench: --step: '%s' is not COLL:BYTES (ar, ag, rs, bc; e.g. ar:16M)\n", t);
			return -1;
		}
		if (c->bytes > o->max_bytes)
			o->max_bytes = c->bytes; /* the buffers hold the largest */
		o->n_step_calls++;
	}
	if (!o->n_step_calls) {
		fprintf(stderr, "gpubench: --step: no collective\n");
		return -1;
	}
	return 0;
}

static void gb_step_launch_busy(cudaStream_t s, int blocks, double us)
{
	if (us <= 0)
		return;
	gb_busy<<<blocks, 32, 0, s>>>((unsigned long long)(us * 1000.0));
	CUDA_CHECK(cudaGetLastError());
}

/* Runs o->steps timed steps (after o->step_warmup untimed ones), sends their times, then
 * checks every distinct collective of the step. */
static void gb_measure_steps(struct gb_proc *p)
{
	const struct gb_options *o = p->o;
	int n = o->n_step_calls, steps = o->steps;
	size_t count[GB_MAX_STEP_CALLS], step_bytes = 0;
	size_t send_max = 0, recv_max = 0;
	for (int i = 0; i < n; i++) {
		int c = o->step_calls[i].coll;
		count[i] = gb_count_for(c, o->step_calls[i].bytes, p->nranks);
		step_bytes += gb_size_of(c, count[i], p->nranks);
		size_t se = c == GB_REDUCESCATTER ? count[i] * p->nranks : count[i];
		size_t re = c == GB_ALLGATHER ? count[i] * p->nranks : count[i];
		send_max = se > send_max ? se : send_max;
		recv_max = re > recv_max ? re : recv_max;
	}
	cudaEvent_t *ev[GB_MAX_GPUS];
	for (int g = 0; g < p->ngpus; g++) {
		struct gb_gpu *u = &p->gpu[g];
		CUDA_CHECK(cudaSetDevice(u->dev));
		ev[g] = (cudaEvent_t *)calloc(2 * (size_t)steps, sizeof(cudaEvent_t));
		if (!ev[g]) { perror("gpubench: calloc"); exit(4); }
		for (int i = 0; i < 2 * steps; i++)
			CUDA_CHECK(cudaEventCreate(&ev[g][i]));
	}
	gb_reset_buffers(p, send_max, recv_max);
	for (int s = -o->step_warmup; s < steps; s++) {
		for (int g = 0; g < p->ngpus; g++) {
			struct gb_gpu *u = &p->gpu[g];
			CUDA_CHECK(cudaSetDevice(u->dev));
			if (s >= 0)
				CUDA_CHECK(cudaEventRecord(ev[g][2 * s], u->stream));
			if (o->overlap_us > 0) {
				/* compute on the other stream from the step's start, joined at its end */
				CUDA_CHECK(cudaEventRecord(u->begin, u->stream));
				CUDA_CHECK(cudaStreamWaitEvent(u->compute_stream, u->begin, 0));
				gb_step_launch_busy(u->compute_stream, o->overlap_blocks, o->overlap_us);
				CUDA_CHECK(cudaEventRecord(u->compute_done, u->compute_stream));
			}
		}
		for (int i = 0; i < n; i++) {
			for (int g = 0; g < p->ngpus && o->gap_us > 0; g++) {
				CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
				gb_step_launch_busy(p->gpu[g].stream, 1, o->gap_us);
			}
			gb_enqueue(p, o->step_calls[i].coll, count[i]);
		}
		for (int g = 0; g < p->ngpus; g++) {
			struct gb_gpu *u = &p->gpu[g];
			CUDA_CHECK(cudaSetDevice(u->dev));
			if (o->overlap_us > 0)
				CUDA_CHECK(cudaStreamWaitEvent(u->stream, u->compute_done, 0));
			if (s >= 0)
				CUDA_CHECK(cudaEventRecord(ev[g][2 * s + 1], u->stream));
			/* the host waits for this step, for the step K before it (--step-ahead K:
			 * a training loop that runs ahead by K steps), or not at all (queued: as far
			 * ahead as CUDA's launch queue lets it) */
			if (s < 0 || (!o->step_queued && o->step_ahead <= 0))
				CUDA_CHECK(cudaStreamSynchronize(u->stream));
			else if (o->step_ahead > 0 && s >= o->step_ahead)
				CUDA_CHECK(cudaEventSynchronize(ev[g][2 * (s - o->step_ahead) + 1]));
		}
	}
	for (int s = 0; s < steps; s++) {
		float worst = 0;
		for (int g = 0; g < p->ngpus; g++) {
			float ms = 0;
			CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
			CUDA_CHECK(cudaEventSynchronize(ev[g][2 * s + 1]));
			CUDA_CHECK(cudaEventElapsedTime(&ms, ev[g][2 * s], ev[g][2 * s + 1]));
			if (ms * 1000.f > worst)
				worst = ms * 1000.f;
		}
		p->iter_us[s] = worst;
	}
	double total = 0;
	for (int s = 0; s < steps; s++)
		total += p->iter_us[s];
	struct gb_msg sm;
	memset(&sm, 0, sizeof(sm));
	sm.kind = 2;
	sm.u.samples.coll = -1;
	sm.u.samples.rep = o->rep_base + p->rep;
	for (int first = 0; first < steps; first += GB_CHUNK) {
		int k = steps - first < GB_CHUNK ? steps - first : GB_CHUNK;
		sm.u.samples.first = first;
		sm.u.samples.n = k;
		memcpy(sm.u.samples.us, p->iter_us + first, (size_t)k * sizeof(float));
		gb_send(p->result_fd, &sm);
	}
	/* every distinct collective of the step, checked once more on fresh buffers */
	long errors = 0;
	for (int i = 0; i < n; i++) {
		int c = o->step_calls[i].coll, dup = 0;
		for (int j = 0; j < i; j++)
			dup |= o->step_calls[j].coll == c && count[j] == count[i];
		if (dup)
			continue;
		size_t se = c == GB_REDUCESCATTER ? count[i] * p->nranks : count[i];
		size_t re = c == GB_ALLGATHER ? count[i] * p->nranks : count[i];
		gb_reset_buffers(p, se, re);
		gb_enqueue(p, c, count[i]);
		errors += gb_check_all(p, c, count[i], re);
	}
	struct gb_result r;
	memset(&r, 0, sizeof(r));
	r.coll = o->step_calls[0].coll;
	r.rep = o->rep_base + p->rep;
	r.bytes = step_bytes;
	r.count = (size_t)n;
	r.time_us = steps ? total / steps : 0;
	r.comm_us = r.time_us;
	r.errors = errors;
	struct gb_msg m;
	memset(&m, 0, sizeof(m));
	m.kind = 0;
	m.u.result = r;
	gb_send(p->result_fd, &m);
	for (int g = 0; g < p->ngpus; g++) {
		CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
		for (int i = 0; i < 2 * steps; i++)
			CUDA_CHECK(cudaEventDestroy(ev[g][i]));
		free(ev[g]);
	}
}

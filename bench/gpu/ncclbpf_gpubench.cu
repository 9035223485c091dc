/* ncclbpf-gpubench: NCCL collective benchmark that launches its own ranks.
 *
 *   ncclbpf-gpubench --procs 4 --gpus-per-proc 1 --coll allreduce --min-bytes 8 \
 *                    --max-bytes 256M --iters 100 --csv out.csv
 *
 * P processes (fork) x G GPUs each; the NCCL unique id goes from rank 0 to the others
 * through pipes (no MPI). --nodes N gives the processes N different NCCL_HOSTID values so
 * NCCL sees N nodes and uses its network transport between them. --same-gpu puts every
 * rank on one device, each rank its own emulated node (the one-GPU multi-node testbed,
 * scripts/emulate-nodes.sh, which also starts the CUDA MPS daemon this mode needs to be
 * fast: without MPS the ranks' kernels time-slice).
 *
 * --samples FILE writes one row per timed collective (the slowest rank's time for that
 * iteration, from CUDA events around every collective) in the offline tuner's format:
 *   coll,bytes,algo,proto,channels,nranks,nnodes,time_us,policy,config,rep,iter
 * algo/proto are NCCL_ALGO/NCCL_PROTO ("default" when unset), channels is the forced
 * channel count (NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS) or 0, policy names the tuner
 * policy under test (--policy, "" for none). Every measured size is
 * checked: the send buffers hold rank-dependent values whose reductions are exact in
 * float32, the receive buffer is poisoned with NaN first, and after the timed iterations a
 * kernel compares every element with the expected value.
 *
 * The plugin under test is selected through NCCL's own variables (NCCL_TUNER_PLUGIN,
 * NCCL_PROFILER_PLUGIN); the harness itself knows nothing of ncclbpf.
 * NVLink multicast (NVLS) is forced off: NCCL_NVLS_ENABLE=0 is set before NCCL starts.
 */
#include <cuda_runtime.h>
#include <errno.h>
#include <math.h>
#include <nccl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpubench_common.h"

#define CUDA_CHECK(call)                                                                   \
	do {                                                                               \
		cudaError_t e_ = (call);                                                   \
		if (e_ != cudaSuccess) {                                                   \
			fprintf(stderr, "gpubench: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,   \
				cudaGetErrorString(e_));                                   \
			exit(2);                                                           \
		}                                                                          \
	} while (0)
#define NCCL_CHECK(call)                                                                   \
	do {                                                                               \
		ncclResult_t r_ = (call);                                                  \
		if (r_ != ncclSuccess) {                                                   \
			fprintf(stderr, "gpubench: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,   \
				ncclGetErrorString(r_));                                   \
			exit(3);                                                           \
		}                                                                          \
	} while (0)

const char *gb_coll_name(int coll)
{
	static const char *names[GB_NCOLLS] = {"allreduce", "allgather", "reducescatter", "broadcast"};
	return coll >= 0 && coll < GB_NCOLLS ? names[coll] : "?";
}

/* ---------------------------------------------------------------- kernels */

/* Value element i of rank r's send buffer: small integers, so sums are exact in float32. */
__device__ __host__ static inline float gb_value(int rank, size_t i)
{
	return (float)((rank + 1) * (int)((i % 7) + 1));
}

__global__ void gb_fill(float *buf, size_t n, int rank)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x)
		buf[i] = gb_value(rank, i);
}

/* Counts elements of recv that differ from what the collective must produce. */
__global__ void gb_check(const float *recv, size_t n, int coll, int rank, int nranks,
			 size_t count, unsigned long long *errors)
{
	float tri = (float)(nranks * (nranks + 1) / 2);
	unsigned long long local = 0;
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
	     i += (size_t)gridDim.x * blockDim.x) {
		float want;
		switch (coll) {
		case GB_ALLREDUCE: want = (float)((i % 7) + 1) * tri; break;
		case GB_ALLGATHER: want = gb_value((int)(i / count), i % count); break;
		case GB_REDUCESCATTER:
			want = (float)(((rank * count + i) % 7) + 1) * tri;
			break;
		default: want = gb_value(0, i); break; /* broadcast from root 0 */
		}
		if (!(recv[i] == want))
			local++;
	}
	if (local)
		atomicAdd(errors, local);
}

/* Matrix-multiply-like load for the overlap mode: C = A x B, n x n, shared-memory tiles. */
#define GB_TILE 16
__global__ void gb_matmul(const float *a, const float *b, float *c, int n)
{
	__shared__ float ta[GB_TILE][GB_TILE];
	__shared__ float tb[GB_TILE][GB_TILE];
	int row = blockIdx.y * GB_TILE + threadIdx.y;
	int col = blockIdx.x * GB_TILE + threadIdx.x;
	float acc = 0.f;
	for (int t = 0; t < n; t += GB_TILE) {
		ta[threadIdx.y][threadIdx.x] = (row < n && t + threadIdx.x < n) ? a[(size_t)row * n + t + threadIdx.x] : 0.f;
		tb[threadIdx.y][threadIdx.x] = (col < n && t + threadIdx.y < n) ? b[(size_t)(t + threadIdx.y) * n + col] : 0.f;
		__syncthreads();
		for (int k = 0; k < GB_TILE; k++)
			acc += ta[threadIdx.y][k] * tb[k][threadIdx.x];
		__syncthreads();
	}
	if (row < n && col < n)
		c[(size_t)row * n + col] = acc;
}

/* ---------------------------------------------------------------- per-GPU state */

struct gb_gpu {
	int dev, rank;
	ncclComm_t comm;
	cudaStream_t stream, compute_stream;
	cudaEvent_t start, stop, compute_done, begin;
	cudaEvent_t *iter_ev; /* iters + 1 events: one before the first and after every collective */
	float *send, *recv;
	float *ma, *mb, *mc;
	unsigned long long *errors;
};

struct gb_proc {
	const struct gb_options *o;
	int proc, nranks;
	struct gb_gpu gpu[GB_MAX_GPUS];
	int ngpus;
	int result_fd;
	int rep;
	int warmup_n;   /* warm-up collectives of the current size (gb_warmup_for) */
	float *iter_us; /* per-iteration time of the last timed run, max over local GPUs */
	int iter_n;
};

static void gb_send(int fd, const struct gb_msg *m)
{
	/* one write of less than PIPE_BUF bytes: atomic even with every rank on the same pipe */
	if (write(fd, m, sizeof(*m)) != (ssize_t)sizeof(*m)) {
		perror("gpubench: result pipe");
		exit(4);
	}
}

/* Warm-up collectives for one size: --warmup, capped at --warmup-bytes / size but at least
 * --min-warmup (an online policy explores its slow arms there: cheap at small sizes, where
 * it needs more samples, costly at large ones). Rank-invariant like gb_iters_for. */
static int gb_warmup_for(const struct gb_options *o, size_t bytes)
{
	int n = o->warmup;
	if (o->warmup_bytes && bytes) {
		size_t cap = o->warmup_bytes / bytes;
		if (cap < (size_t)n)
			n = (int)cap;
		if (n < o->min_warmup)
			n = o->min_warmup;
		if (n > o->warmup)
			n = o->warmup;
	}
	return n;
}

/* Timed iterations for one size: --iters, capped at --iter-bytes / size but at least
 * --min-iters. A function of the options and the size only, so every rank runs the same. */
static int gb_iters_for(const struct gb_options *o, size_t bytes)
{
	int n = o->iters;
	if (o->iter_bytes && bytes) {
		size_t cap = o->iter_bytes / bytes;
		if (cap < (size_t)n)
			n = (int)cap;
	}
	if (n < o->min_iters)
		n = o->min_iters;
	if (n > o->iters)
		n = o->iters;
	return n < 1 ? 1 : n;
}

/* Send count (elements per rank) and nccl-tests "size" for a requested byte size. */
static size_t gb_count_for(int coll, size_t bytes, int nranks)
{
	size_t elems = bytes / sizeof(float);
	if (coll == GB_ALLGATHER || coll == GB_REDUCESCATTER)
		elems /= (size_t)nranks;
	return elems ? elems : 1;
}

static size_t gb_size_of(int coll, size_t count, int nranks)
{
	size_t b = count * sizeof(float);
	if (coll == GB_ALLGATHER || coll == GB_REDUCESCATTER)
		b *= (size_t)nranks;
	return b;
}

static double gb_bus_factor(int coll, int nranks)
{
	switch (coll) {
	case GB_ALLREDUCE: return 2.0 * (nranks - 1) / nranks;
	case GB_ALLGATHER:
	case GB_REDUCESCATTER: return (double)(nranks - 1) / nranks;
	default: return 1.0;
	}
}

/* Enqueues one collective on every local GPU (one NCCL group). */
static void gb_enqueue(struct gb_proc *p, int coll, size_t count)
{
	NCCL_CHECK(ncclGroupStart());
	for (int g = 0; g < p->ngpus; g++) {
		struct gb_gpu *u = &p->gpu[g];
		switch (coll) {
		case GB_ALLREDUCE:
			NCCL_CHECK(ncclAllReduce(u->send, u->recv, count, ncclFloat32, ncclSum, u->comm, u->stream));
			break;
		case GB_ALLGATHER:
			NCCL_CHECK(ncclAllGather(u->send, u->recv, count, ncclFloat32, u->comm, u->stream));
			break;
		case GB_REDUCESCATTER:
			NCCL_CHECK(ncclReduceScatter(u->send, u->recv, count, ncclFloat32, ncclSum, u->comm, u->stream));
			break;
		default:
			NCCL_CHECK(ncclBroadcast(u->send, u->recv, count, ncclFloat32, 0, u->comm, u->stream));
			break;
		}
	}
	NCCL_CHECK(ncclGroupEnd());
}

static void gb_launch_matmul(struct gb_gpu *u, int n)
{
	dim3 block(GB_TILE, GB_TILE);
	dim3 grid((n + GB_TILE - 1) / GB_TILE, (n + GB_TILE - 1) / GB_TILE);
	gb_matmul<<<grid, block, 0, u->compute_stream>>>(u->ma, u->mb, u->mc, n);
	CUDA_CHECK(cudaGetLastError());
}

/* Max over local GPUs of the time between each GPU's start and stop events, in µs. */
static double gb_elapsed_us(struct gb_proc *p, int iters)
{
	double worst = 0;
	for (int g = 0; g < p->ngpus; g++) {
		float ms = 0;
		CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
		CUDA_CHECK(cudaEventSynchronize(p->gpu[g].stop));
		CUDA_CHECK(cudaEventElapsedTime(&ms, p->gpu[g].start, p->gpu[g].stop));
		if (ms * 1000.0 / iters > worst)
			worst = ms * 1000.0 / iters;
	}
	return worst;
}

static void gb_record_all(struct gb_proc *p, int which_stop)
{
	for (int g = 0; g < p->ngpus; g++) {
		CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
		CUDA_CHECK(cudaEventRecord(which_stop ? p->gpu[g].stop : p->gpu[g].start, p->gpu[g].stream));
	}
}

/* Times `iters` collectives (optionally captured as a graph). Outside graph mode every
 * collective is bracketed by events, so p->iter_us gets each iteration's time as well. */
static double gb_time_comm(struct gb_proc *p, int coll, size_t count, int iters)
{
	const struct gb_options *o = p->o;
	p->iter_n = 0;
	for (int i = 0; i < p->warmup_n; i++) {
		gb_enqueue(p, coll, count);
		int wait = o->warmup_sync > 0 && ((i + 1) % o->warmup_sync == 0 || i + 1 == p->warmup_n);
		for (int g = 0; wait && g < p->ngpus; g++) {
			CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
			CUDA_CHECK(cudaStreamSynchronize(p->gpu[g].stream));
		}
	}
	if (o->graph) {
		struct gb_gpu *u = &p->gpu[0];
		cudaGraph_t graph;
		cudaGraphExec_t exec;
		CUDA_CHECK(cudaSetDevice(u->dev));
		CUDA_CHECK(cudaStreamBeginCapture(u->stream, cudaStreamCaptureModeGlobal));
		for (int i = 0; i < iters; i++)
			gb_enqueue(p, coll, count);
		CUDA_CHECK(cudaStreamEndCapture(u->stream, &graph));
		CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
		CUDA_CHECK(cudaGraphLaunch(exec, u->stream)); /* warm-up replay */
		CUDA_CHECK(cudaEventRecord(u->start, u->stream));
		CUDA_CHECK(cudaGraphLaunch(exec, u->stream));
		CUDA_CHECK(cudaEventRecord(u->stop, u->stream));
		double t = gb_elapsed_us(p, iters);
		CUDA_CHECK(cudaGraphExecDestroy(exec));
		CUDA_CHECK(cudaGraphDestroy(graph));
		return t;
	}
	gb_record_all(p, 0);
	for (int g = 0; g < p->ngpus; g++) {
		CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
		CUDA_CHECK(cudaEventRecord(p->gpu[g].iter_ev[0], p->gpu[g].stream));
	}
	for (int i = 0; i < iters; i++) {
		gb_enqueue(p, coll, count);
		for (int g = 0; g < p->ngpus; g++) {
			CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
			CUDA_CHECK(cudaEventRecord(p->gpu[g].iter_ev[i + 1], p->gpu[g].stream));
		}
		/* a step boundary: the next iteration's time includes the host's launch */
		for (int g = 0; o->sync_every > 0 && (i + 1) % o->sync_every == 0 && g < p->ngpus; g++) {
			CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
			CUDA_CHECK(cudaStreamSynchronize(p->gpu[g].stream));
		}
	}
	gb_record_all(p, 1);
	double t = gb_elapsed_us(p, iters);
	for (int i = 0; i < iters; i++) {
		float worst = 0;
		for (int g = 0; g < p->ngpus; g++) {
			float ms = 0;
			CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
			CUDA_CHECK(cudaEventElapsedTime(&ms, p->gpu[g].iter_ev[i], p->gpu[g].iter_ev[i + 1]));
			if (ms * 1000.f > worst)
				worst = ms * 1000.f;
		}
		p->iter_us[i] = worst;
	}
	p->iter_n = iters;
	return t;
}

/* Compute kernel alone, on the collective's stream so the same events time it. */
static double gb_time_compute(struct gb_proc *p, int iters)
{
	const struct gb_options *o = p->o;
	gb_record_all(p, 0);
	for (int g = 0; g < p->ngpus; g++) {
		struct gb_gpu *u = &p->gpu[g];
		CUDA_CHECK(cudaSetDevice(u->dev));
		CUDA_CHECK(cudaEventRecord(u->begin, u->stream));
		CUDA_CHECK(cudaStreamWaitEvent(u->compute_stream, u->begin, 0));
		for (int i = 0; i < iters; i++)
			gb_launch_matmul(u, o->overlap_n);
		CUDA_CHECK(cudaEventRecord(u->compute_done, u->compute_stream));
		CUDA_CHECK(cudaStreamWaitEvent(u->stream, u->compute_done, 0));
	}
	gb_record_all(p, 1);
	return gb_elapsed_us(p, iters);
}

/* Compute and collective concurrently, iteration by iteration: time of the pair. */
static double gb_time_overlap(struct gb_proc *p, int coll, size_t count, int iters)
{
	const struct gb_options *o = p->o;
	gb_record_all(p, 0);
	for (int i = 0; i < iters; i++) {
		for (int g = 0; g < p->ngpus; g++) {
			struct gb_gpu *u = &p->gpu[g];
			CUDA_CHECK(cudaSetDevice(u->dev));
			CUDA_CHECK(cudaEventRecord(u->begin, u->stream));
			CUDA_CHECK(cudaStreamWaitEvent(u->compute_stream, u->begin, 0));
			gb_launch_matmul(u, o->overlap_n);
			CUDA_CHECK(cudaEventRecord(u->compute_done, u->compute_stream));
		}
		gb_enqueue(p, coll, count);
		for (int g = 0; g < p->ngpus; g++) {
			CUDA_CHECK(cudaSetDevice(p->gpu[g].dev));
			CUDA_CHECK(cudaStreamWaitEvent(p->gpu[g].stream, p->gpu[g].compute_done, 0));
		}
	}
	gb_record_all(p, 1);
	return gb_elapsed_us(p, iters);
}

static void gb_reset_buffers(struct gb_proc *p, size_t send_elems, size_t recv_elems)
{
	for (int g = 0; g < p->ngpus; g++) {
		struct gb_gpu *u = &p->gpu[g];
		CUDA_CHECK(cudaSetDevice(u->dev));
		gb_fill<<<1024, 256, 0, u->stream>>>(u->send, send_elems, u->rank);
		CUDA_CHECK(cudaGetLastError());
		CUDA_CHECK(cudaMemsetAsync(u->recv, 0xff, recv_elems * sizeof(float), u->stream)); /* NaN */
		CUDA_CHECK(cudaMemsetAsync(u->errors, 0, sizeof(*u->errors), u->stream));
	}
}

static long gb_check_all(struct gb_proc *p, int coll, size_t count, size_t recv_elems)
{
	long total = 0;
	for (int g = 0; g < p->ngpus; g++) {
		struct gb_gpu *u = &p->gpu[g];
		unsigned long long host = 0;
		CUDA_CHECK(cudaSetDevice(u->dev));
		gb_check<<<1024, 256, 0, u->stream>>>(u->recv, recv_elems, coll, u->rank, p->nranks, count, u->errors);
		CUDA_CHECK(cudaGetLastError());
		CUDA_CHECK(cudaMemcpyAsync(&host, u->errors, sizeof(host), cudaMemcpyDeviceToHost, u->stream));
		CUDA_CHECK(cudaStreamSynchronize(u->stream));
		total += (long)host;
	}
	return total;
}

static void gb_measure(struct gb_proc *p, int coll, size_t bytes)
{
	const struct gb_options *o = p->o;
	struct gb_result r;
	memset(&r, 0, sizeof(r));
	int iters = gb_iters_for(o, bytes);
	p->warmup_n = gb_warmup_for(o, bytes);
	r.coll = coll;
	r.rep = o->rep_base + p->rep;
	r.count = gb_count_for(coll, bytes, p->nranks);
	r.bytes = gb_size_of(coll, r.count, p->nranks);
	size_t send_elems = coll == GB_REDUCESCATTER ? r.count * p->nranks : r.count;
	size_t recv_elems = coll == GB_ALLGATHER ? r.count * p->nranks : r.count;
	size_t count_arg = r.count;

	gb_reset_buffers(p, send_elems, recv_elems);
	r.comm_us = gb_time_comm(p, coll, count_arg, iters);
	r.time_us = r.comm_us;
	if (o->samples_path && p->iter_n) {
		struct gb_msg sm;
		memset(&sm, 0, sizeof(sm));
		sm.kind = 1;
		sm.u.samples.coll = coll;
		sm.u.samples.rep = o->rep_base + p->rep;
		sm.u.samples.bytes = r.bytes;
		for (int first = 0; first < p->iter_n; first += GB_CHUNK) {
			int n = p->iter_n - first < GB_CHUNK ? p->iter_n - first : GB_CHUNK;
			sm.u.samples.first = first;
			sm.u.samples.n = n;
			memcpy(sm.u.samples.us, p->iter_us + first, n * sizeof(float));
			gb_send(p->result_fd, &sm);
		}
	}
	if (o->overlap) {
		r.compute_us = gb_time_compute(p, iters);
		r.time_us = gb_time_overlap(p, coll, count_arg, iters);
	}
	r.errors = gb_check_all(p, coll, r.count, recv_elems);
	r.algbw = r.bytes / (r.comm_us * 1e-6) / 1e9;
	r.busbw = r.algbw * gb_bus_factor(coll, p->nranks);
	struct gb_msg m;
	memset(&m, 0, sizeof(m));
	m.kind = 0;
	m.u.result = r;
	gb_send(p->result_fd, &m);
}

static size_t gb_parse_size(const char *s);
#include "gpubench_steps.cuh"

/* ---------------------------------------------------------------- rank processes */

static void gb_rank_process(const struct gb_options *o, int proc, int id_read_fd,
			    int *id_write_fds, int result_fd)
{
	struct gb_proc p;
	memset(&p, 0, sizeof(p));
	p.o = o;
	p.proc = proc;
	p.ngpus = o->gpus_per_proc;
	p.nranks = o->procs * o->gpus_per_proc;
	p.result_fd = result_fd;
	p.iter_us = (float *)calloc((size_t)(o->iters > o->steps ? o->iters : o->steps), sizeof(float));
	if (!p.iter_us) { perror("gpubench: calloc"); exit(4); }

	if (o->nodes > 1) {
		char host[64];
		int per_node = o->procs / o->nodes;
		snprintf(host, sizeof(host), "ncclbpf-gpubench-node%d", proc / per_node);
		setenv("NCCL_HOSTID", host, 1);
	}

	ncclUniqueId id;
	if (proc == 0) {
		NCCL_CHECK(ncclGetUniqueId(&id));
		for (int i = 1; i < o->procs; i++)
			if (write(id_write_fds[i], &id, sizeof(id)) != (ssize_t)sizeof(id)) {
				perror("gpubench: id pipe");
				exit(4);
			}
	} else if (read(id_read_fd, &id, sizeof(id)) != (ssize_t)sizeof(id)) {
		perror("gpubench: id pipe");
		exit(4);
	}

	/* room for the largest size, and for count = 1 per rank when a size is below nranks elements */
	size_t max_elems = o->max_bytes / sizeof(float) + 2 * (size_t)p.nranks;
	NCCL_CHECK(ncclGroupStart());
	for (int g = 0; g < p.ngpus; g++) {
		struct gb_gpu *u = &p.gpu[g];
		u->dev = o->same_gpu ? o->same_gpu_dev
			 : o->device_count ? (proc * o->gpus_per_proc + g) % o->device_count
			 : proc * o->gpus_per_proc + g;
		u->rank = proc * o->gpus_per_proc + g;
		CUDA_CHECK(cudaSetDevice(u->dev));
		CUDA_CHECK(cudaStreamCreateWithFlags(&u->stream, cudaStreamNonBlocking));
		CUDA_CHECK(cudaStreamCreateWithFlags(&u->compute_stream, cudaStreamNonBlocking));
		CUDA_CHECK(cudaEventCreate(&u->start));
		CUDA_CHECK(cudaEventCreate(&u->stop));
		CUDA_CHECK(cudaEventCreateWithFlags(&u->begin, cudaEventDisableTiming));
		CUDA_CHECK(cudaEventCreateWithFlags(&u->compute_done, cudaEventDisableTiming));
		u->iter_ev = (cudaEvent_t *)calloc((size_t)o->iters + 1, sizeof(cudaEvent_t));
		if (!u->iter_ev) { perror("gpubench: calloc"); exit(4); }
		for (int i = 0; i <= o->iters; i++)
			CUDA_CHECK(cudaEventCreate(&u->iter_ev[i]));
		CUDA_CHECK(cudaMalloc((void **)&u->send, max_elems * sizeof(float)));
		CUDA_CHECK(cudaMalloc((void **)&u->recv, max_elems * sizeof(float)));
		CUDA_CHECK(cudaMalloc((void **)&u->errors, sizeof(*u->errors)));
		if (o->overlap) {
			size_t mat = (size_t)o->overlap_n * o->overlap_n;
			CUDA_CHECK(cudaMalloc((void **)&u->ma, mat * sizeof(float)));
			CUDA_CHECK(cudaMalloc((void **)&u->mb, mat * sizeof(float)));
			CUDA_CHECK(cudaMalloc((void **)&u->mc, mat * sizeof(float)));
			gb_fill<<<1024, 256>>>(u->ma, mat, 1);
			gb_fill<<<1024, 256>>>(u->mb, mat, 2);
			CUDA_CHECK(cudaGetLastError());
		}
		NCCL_CHECK(ncclCommInitRank(&u->comm, p.nranks, id, u->rank));
	}
	NCCL_CHECK(ncclGroupEnd());

	for (p.rep = 0; p.rep < o->reps && o->n_step_calls; p.rep++)
		gb_measure_steps(&p);
	for (p.rep = 0; p.rep < o->reps && !o->n_step_calls; p.rep++)
		for (int c = 0; c < GB_NCOLLS; c++) {
			if (!o->colls[c])
				continue;
			for (size_t b = o->min_bytes; b <= o->max_bytes; b *= (size_t)o->step_factor) {
				gb_measure(&p, c, b);
				if (o->step_factor < 2)
					break;
			}
		}
	for (int g = 0; g < p.ngpus; g++) {
		CUDA_CHECK(cudaSetDevice(p.gpu[g].dev));
		CUDA_CHECK(cudaStreamSynchronize(p.gpu[g].stream));
		NCCL_CHECK(ncclCommDestroy(p.gpu[g].comm));
	}
	exit(0);
}

/* ---------------------------------------------------------------- launcher */

static size_t gb_parse_size(const char *s)
{
	char *end;
	double v = strtod(s, &end);
	switch (*end) {
	case 'K': case 'k': v *= 1024; break;
	case 'M': case 'm': v *= 1024 * 1024; break;
	case 'G': case 'g': v *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return (size_t)v;
}

static void gb_usage(void)
{
	fprintf(stderr,
		"usage: ncclbpf-gpubench [--procs P] [--gpus-per-proc G] [--nodes N] [--same-gpu [DEV]]\n"
		"         [--device-count D]   (devices used round-robin: nodes share D GPUs)\n"
		"         [--coll allreduce|allgather|reducescatter|broadcast|all[,..]]\n"
		"         [--min-bytes S] [--max-bytes S] [--step-factor F]\n"
		"         [--warmup W [--warmup-bytes B --min-warmup N]] [--iters I]\n"
		"         [--iter-bytes B [--min-iters N]] [--reps R] [--rep-base N] [--warmup-sync]\n"
		"         [--warmup-sync-every K] [--sync-every K]\n"
		"         [--graph] [--overlap [--overlap-n N]] [--csv FILE] [--json FILE] [--label L]\n"
		"         [--samples FILE [--policy NAME]]\n"
		"         [--step COLL:BYTES,... [--steps N] [--step-warmup N] [--gap-us G]\n"
		"          [--overlap-us C [--overlap-blocks B]] [--step-queued | --step-ahead K]\n"
		"          [--steps-out FILE]\n"
		"          [--workload NAME]]   (COLL: ar, ag, rs, bc)\n");
	exit(1);
}

static void gb_parse(int argc, char **argv, struct gb_options *o)
{
	memset(o, 0, sizeof(*o));
	o->procs = 1;
	o->gpus_per_proc = 1;
	o->nodes = 0; /* 0: 1, or one node per process with --same-gpu */
	o->min_bytes = 8;
	o->max_bytes = 64 << 20;
	o->step_factor = 2;
	o->warmup = 20;
	o->iters = 100;
	o->min_iters = 1;
	o->reps = 1;
	o->overlap_n = 2048;
	o->label = "";
	o->policy = "";
	o->steps = 200;
	o->step_warmup = 2;
	o->overlap_blocks = 16;
	o->workload = "step";
	int any = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define GB_NEED() do { if (!v) gb_usage(); i++; } while (0)
		if (!strcmp(a, "--procs")) { GB_NEED(); o->procs = atoi(v); }
		else if (!strcmp(a, "--gpus-per-proc")) { GB_NEED(); o->gpus_per_proc = atoi(v); }
		else if (!strcmp(a, "--nodes")) { GB_NEED(); o->nodes = atoi(v); }
		else if (!strcmp(a, "--device-count")) { GB_NEED(); o->device_count = atoi(v); }
		else if (!strcmp(a, "--same-gpu")) {
			o->same_gpu = 1;
			if (v && v[0] >= '0' && v[0] <= '9') { o->same_gpu_dev = atoi(v); i++; }
		}
		else if (!strcmp(a, "--coll")) {
			GB_NEED();
			char buf[256];
			snprintf(buf, sizeof(buf), "%s", v);
			for (char *t = strtok(buf, ","); t; t = strtok(NULL, ",")) {
				int found = 0;
				for (int c = 0; c < GB_NCOLLS; c++)
					if (!strcasecmp(t, gb_coll_name(c)) || !strcmp(t, "all")) {
						o->colls[c] = 1;
						found = 1;
					}
				if (!found) { fprintf(stderr, "gpubench: unknown collective '%s'\n", t); exit(1); }
				any = 1;
			}
		}
		else if (!strcmp(a, "--min-bytes")) { GB_NEED(); o->min_bytes = gb_parse_size(v); }
		else if (!strcmp(a, "--max-bytes")) { GB_NEED(); o->max_bytes = gb_parse_size(v); }
		else if (!strcmp(a, "--step-factor")) { GB_NEED(); o->step_factor = atoi(v); }
		else if (!strcmp(a, "--warmup")) { GB_NEED(); o->warmup = atoi(v); }
		else if (!strcmp(a, "--iters")) { GB_NEED(); o->iters = atoi(v); }
		else if (!strcmp(a, "--min-iters")) { GB_NEED(); o->min_iters = atoi(v); }
		else if (!strcmp(a, "--iter-bytes")) { GB_NEED(); o->iter_bytes = gb_parse_size(v); }
		else if (!strcmp(a, "--reps")) { GB_NEED(); o->reps = atoi(v); }
		else if (!strcmp(a, "--rep-base")) { GB_NEED(); o->rep_base = atoi(v); }
		else if (!strcmp(a, "--warmup-bytes")) { GB_NEED(); o->warmup_bytes = gb_parse_size(v); }
		else if (!strcmp(a, "--min-warmup")) { GB_NEED(); o->min_warmup = atoi(v); }
		else if (!strcmp(a, "--warmup-sync")) o->warmup_sync = 1;
		else if (!strcmp(a, "--warmup-sync-every")) { GB_NEED(); o->warmup_sync = atoi(v); }
		else if (!strcmp(a, "--sync-every")) { GB_NEED(); o->sync_every = atoi(v); }
		else if (!strcmp(a, "--graph")) o->graph = 1;
		else if (!strcmp(a, "--overlap")) o->overlap = 1;
		else if (!strcmp(a, "--overlap-n")) { GB_NEED(); o->overlap_n = atoi(v); }
		else if (!strcmp(a, "--csv")) { GB_NEED(); o->csv_path = v; }
		else if (!strcmp(a, "--json")) { GB_NEED(); o->json_path = v; }
		else if (!strcmp(a, "--samples")) { GB_NEED(); o->samples_path = v; }
		else if (!strcmp(a, "--policy")) { GB_NEED(); o->policy = v; }
		else if (!strcmp(a, "--label")) { GB_NEED(); o->label = v; }
		else if (!strcmp(a, "--step")) { GB_NEED(); if (gb_step_parse(o, v)) exit(1); }
		else if (!strcmp(a, "--steps")) { GB_NEED(); o->steps = atoi(v); }
		else if (!strcmp(a, "--step-warmup")) { GB_NEED(); o->step_warmup = atoi(v); }
		else if (!strcmp(a, "--gap-us")) { GB_NEED(); o->gap_us = atof(v); }
		else if (!strcmp(a, "--overlap-us")) { GB_NEED(); o->overlap_us = atof(v); }
		else if (!strcmp(a, "--overlap-blocks")) { GB_NEED(); o->overlap_blocks = atoi(v); }
		else if (!strcmp(a, "--step-queued")) o->step_queued = 1;
		else if (!strcmp(a, "--step-ahead")) {
			GB_NEED();
			o->step_ahead = atoi(v);
			if (o->step_ahead < 1) gb_usage();
		}
		else if (!strcmp(a, "--steps-out")) { GB_NEED(); o->steps_path = v; }
		else if (!strcmp(a, "--workload")) { GB_NEED(); o->workload = v; }
		else gb_usage();
#undef GB_NEED
	}
	if (o->step_queued && o->step_ahead) {
		fprintf(stderr, "gpubench: --step-queued (never wait) and --step-ahead K (wait for the "
				"step K back) exclude each other\n");
		exit(1);
	}
	if (!any)
		o->colls[GB_ALLREDUCE] = 1;
	if (o->nodes == 0)
		o->nodes = o->same_gpu ? o->procs : 1;
	if (o->procs < 1 || o->gpus_per_proc < 1 || o->gpus_per_proc > GB_MAX_GPUS || o->iters < 1 ||
	    o->warmup < 0 || o->min_bytes < 1 || o->max_bytes < o->min_bytes || o->step_factor < 1 ||
	    o->nodes < 1 || o->procs % o->nodes || o->overlap_n < 16 || o->reps < 1 || o->reps > 1000 || o->rep_base < 0 || o->rep_base > 1000000 || o->min_warmup < 0 ||
	    o->warmup_sync < 0 || o->sync_every < 0 ||
	    o->min_iters < 1 || o->device_count < 0 ||
	    (o->device_count && o->gpus_per_proc > o->device_count)) {
		fprintf(stderr, "gpubench: inconsistent options (procs must be a multiple of nodes)\n");
		exit(1);
	}
	if (o->n_step_calls && (o->steps < 1 || o->steps > 100000 || o->step_warmup < 0 ||
				o->gap_us < 0 || o->gap_us > 1e6 || o->overlap_us < 0 || o->overlap_us > 1e6 ||
				o->overlap_blocks < 1 || o->overlap_blocks > 1024 || o->graph || o->overlap)) {
		fprintf(stderr, "gpubench: --step: bad --steps/--step-warmup/--gap-us/--overlap-us/"
				"--overlap-blocks, or combined with --graph/--overlap\n");
		exit(1);
	}
	if (o->graph && o->gpus_per_proc != 1) {
		fprintf(stderr, "gpubench: --graph needs --gpus-per-proc 1\n");
		exit(1);
	}
	if (o->samples_path && o->graph) {
		fprintf(stderr, "gpubench: --samples times every collective with events: not with --graph\n");
		exit(1);
	}
	/* NCCL refuses two ranks of one node on the same device: every rank its own node. */
	if (o->same_gpu && (o->gpus_per_proc != 1 || o->nodes != o->procs)) {
		fprintf(stderr, "gpubench: --same-gpu needs --gpus-per-proc 1 and one node per process\n");
		exit(1);
	}
}

/* Per (rep, coll, size): the slowest rank's time of every timed iteration. */
struct gb_series {
	int coll, rep;
	size_t bytes;
	int n;           /* iterations seen (highest index + 1) */
	float *us;       /* max over ranks */
	int *ranks;      /* ranks that reported each iteration */
};

static struct gb_series *gb_series_get(struct gb_series **all, int *n_all, int *cap, int coll, int rep,
				       size_t bytes, int iters)
{
	for (int k = 0; k < *n_all; k++)
		if ((*all)[k].coll == coll && (*all)[k].rep == rep && (*all)[k].bytes == bytes)
			return &(*all)[k];
	if (*n_all == *cap) {
		int nc = *cap ? 2 * *cap : 64;
		struct gb_series *grown = (struct gb_series *)realloc(*all, nc * sizeof(**all));
		if (!grown) return NULL;
		*all = grown;
		*cap = nc;
	}
	struct gb_series *s = &(*all)[(*n_all)++];
	memset(s, 0, sizeof(*s));
	s->coll = coll;
	s->rep = rep;
	s->bytes = bytes;
	s->us = (float *)calloc((size_t)iters, sizeof(float));
	s->ranks = (int *)calloc((size_t)iters, sizeof(int));
	if (!s->us || !s->ranks) return NULL;
	return s;
}

static int gb_read_full(int fd, void *buf, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = read(fd, (char *)buf + got, n - got);
		if (r < 0 && errno == EINTR) continue;
		if (r <= 0) return -1;
		got += (size_t)r;
	}
	return 0;
}

/* NCCL's names, as the offline tuner and NCCL's own tuner rules spell them. */
static const char *gb_coll_nccl_name(int coll)
{
	static const char *names[GB_NCOLLS] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast"};
	return coll >= 0 && coll < GB_NCOLLS ? names[coll] : "?";
}

/* Forced channel count: NCCL_MIN_NCHANNELS = NCCL_MAX_NCHANNELS, else 0 (NCCL's choice). */
static int gb_forced_channels(void)
{
	const char *lo = getenv("NCCL_MIN_NCHANNELS"), *hi = getenv("NCCL_MAX_NCHANNELS");
	if (lo && hi && atoi(lo) > 0 && atoi(lo) == atoi(hi))
		return atoi(lo);
	return 0;
}

/* CSV fields from the environment must not break the row: no commas, quotes or newlines. */
static const char *gb_csv_safe(const char *v, const char *dflt, char *buf, size_t len)
{
	if (!v || !*v) return dflt;
	snprintf(buf, len, "%s", v);
	for (char *c = buf; *c; c++)
		if (*c == ',' || *c == '"' || *c == '\n' || *c == '\r') *c = ';';
	return buf;
}

int main(int argc, char **argv)
{
	struct gb_options o;
	gb_parse(argc, argv, &o);
	/* NVLink multicast can take a shared host out of service: never on in this harness. */
	setenv("NCCL_NVLS_ENABLE", "0", 1);
	static_assert(sizeof(struct gb_msg) <= 4096, "a pipe message must be one atomic write");

	int result_pipe[2];
	int id_pipes[64][2];
	if (o.procs > 64) { fprintf(stderr, "gpubench: at most 64 processes\n"); return 1; }
	if (pipe(result_pipe)) { perror("pipe"); return 1; }
	for (int i = 0; i < o.procs; i++)
		if (pipe(id_pipes[i])) { perror("pipe"); return 1; }
	int write_fds[64];
	for (int i = 0; i < o.procs; i++)
		write_fds[i] = id_pipes[i][1];

	pid_t pids[64];
	for (int i = 0; i < o.procs; i++) {
		pids[i] = fork();
		if (pids[i] < 0) { perror("fork"); return 1; }
		if (pids[i] == 0) {
			close(result_pipe[0]);
			gb_rank_process(&o, i, id_pipes[i][0], write_fds, result_pipe[1]);
		}
	}
	close(result_pipe[1]);

	/* Collect: one record per (process, rep, size); reduce by max time, summed errors. */
	enum { GB_MAX_RESULTS = GB_NCOLLS * GB_MAX_SIZES * 16 };
	static struct gb_result all[GB_MAX_RESULTS];
	static int seen[GB_MAX_RESULTS];
	int n_all = 0;
	struct gb_series *series = NULL;
	int n_series = 0, cap_series = 0, oom = 0;
	static struct gb_msg msg;
	struct gb_series *step_series = NULL;
	int n_step_series = 0, cap_step_series = 0;
	while (gb_read_full(result_pipe[0], &msg, sizeof(msg)) == 0) {
		if (msg.kind == 1 || msg.kind == 2) {
			/* per-collective samples (1) or step times (2): max over ranks per index */
			struct gb_samples *sm = &msg.u.samples;
			int steps = msg.kind == 2, cap = steps ? o.steps : o.iters;
			struct gb_series *s = steps ? gb_series_get(&step_series, &n_step_series, &cap_step_series,
								  -1, sm->rep, 0, cap)
						    : gb_series_get(&series, &n_series, &cap_series, sm->coll,
								  sm->rep, sm->bytes, cap);
			if (!s || sm->first < 0 || sm->n < 0 || sm->n > GB_CHUNK || sm->first + sm->n > cap) {
				oom = 1;
				continue;
			}
			for (int i = 0; i < sm->n; i++) {
				int k = sm->first + i;
				if (sm->us[i] > s->us[k]) s->us[k] = sm->us[i];
				s->ranks[k]++;
			}
			if (sm->first + sm->n > s->n) s->n = sm->first + sm->n;
			continue;
		}
		struct gb_result r = msg.u.result;
		int k;
		for (k = 0; k < n_all; k++)
			if (all[k].coll == r.coll && all[k].bytes == r.bytes && all[k].rep == r.rep)
				break;
		if (k == n_all) {
			if (n_all == GB_MAX_RESULTS) continue;
			all[n_all++] = r;
		} else {
			if (r.time_us > all[k].time_us) all[k].time_us = r.time_us;
			if (r.comm_us > all[k].comm_us) {
				all[k].comm_us = r.comm_us;
				all[k].algbw = r.algbw;
				all[k].busbw = r.busbw;
			}
			if (r.compute_us > all[k].compute_us) all[k].compute_us = r.compute_us;
			all[k].errors += r.errors;
		}
		seen[k]++;
	}
	int failed = oom, ranks_failed = 0;
	if (oom) fprintf(stderr, "gpubench: bad or unstorable sample message\n");
	for (int i = 0; i < o.procs; i++) {
		int st = 0;
		waitpid(pids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "gpubench: rank process %d failed (status %d)\n", i, st);
			failed = 1;
			ranks_failed++;
		}
	}

	FILE *csv = o.csv_path ? fopen(o.csv_path, "a") : NULL;
	FILE *json = o.json_path ? fopen(o.json_path, "a") : NULL;
	if (csv && ftell(csv) == 0)
		fprintf(csv, "label,coll,bytes,count,nranks,nodes,time_us,algbw_GBs,busbw_GBs,compute_us,comm_us,errors,rep\n");
	int nranks = o.procs * o.gpus_per_proc;
	printf("# ncclbpf-gpubench: %d ranks (%d procs x %d GPUs%s), %d node(s), warmup %d, iters %d%s%s%s\n",
	       nranks, o.procs, o.gpus_per_proc, o.same_gpu ? ", all on one GPU" : "", o.nodes, o.warmup,
	       o.iters, o.iter_bytes ? " (capped by --iter-bytes)" : "", o.graph ? ", graph" : "",
	       o.overlap ? ", overlap" : "");
	printf("# %-4s %-13s %12s %10s %10s %10s %10s %10s %s\n", "rep", "coll", "size(B)", "time(us)", "algbw",
	       "busbw", o.overlap ? "compute" : "", o.overlap ? "comm" : "", "check");
	long errors = 0, missing = 0;
	for (int k = 0; k < n_all; k++) {
		struct gb_result *x = &all[k];
		int complete = seen[k] == o.procs;
		errors += x->errors;
		missing += !complete;
		printf("  %-4d %-13s %12zu %10.2f %10.2f %10.2f %10.2f %10.2f %s\n", x->rep, gb_coll_name(x->coll),
		       x->bytes, x->time_us, x->algbw, x->busbw, x->compute_us, x->comm_us,
		       !complete ? "MISSING" : x->errors ? "WRONG" : "ok");
		if (csv)
			fprintf(csv, "%s,%s,%zu,%zu,%d,%d,%.3f,%.3f,%.3f,%.3f,%.3f,%ld,%d\n", o.label,
				gb_coll_name(x->coll), x->bytes, x->count, nranks, o.nodes, x->time_us, x->algbw,
				x->busbw, x->compute_us, x->comm_us, x->errors, x->rep);
		if (json)
			fprintf(json,
				"{\"label\":\"%s\",\"coll\":\"%s\",\"bytes\":%zu,\"count\":%zu,\"nranks\":%d,"
				"\"nodes\":%d,\"time_us\":%.3f,\"algbw_GBs\":%.3f,\"busbw_GBs\":%.3f,"
				"\"compute_us\":%.3f,\"comm_us\":%.3f,\"errors\":%ld,\"rep\":%d}\n",
				o.label, gb_coll_name(x->coll), x->bytes, x->count, nranks, o.nodes, x->time_us,
				x->algbw, x->busbw, x->compute_us, x->comm_us, x->errors, x->rep);
	}
	if (csv) fclose(csv);
	if (json) fclose(json);

	/* Samples only for complete, correct runs: a wrong result must not become training data. */
	if (o.samples_path && !failed && !errors) {
		FILE *sf = fopen(o.samples_path, "a");
		if (!sf) { perror(o.samples_path); return 1; }
		char abuf[64], pbuf[64], polbuf[128], cfgbuf[128];
		const char *algo = gb_csv_safe(getenv("NCCL_ALGO"), "default", abuf, sizeof(abuf));
		const char *proto = gb_csv_safe(getenv("NCCL_PROTO"), "default", pbuf, sizeof(pbuf));
		const char *policy = gb_csv_safe(o.policy, "", polbuf, sizeof(polbuf));
		const char *config = gb_csv_safe(o.label, "", cfgbuf, sizeof(cfgbuf));
		int channels = gb_forced_channels();
		if (ftell(sf) == 0)
			fprintf(sf, "coll,bytes,algo,proto,channels,nranks,nnodes,time_us,policy,config,rep,iter\n");
		for (int k = 0; k < n_series; k++) {
			struct gb_series *s = &series[k];
			for (int i = 0; i < s->n; i++) {
				if (s->ranks[i] != o.procs) {
					fprintf(stderr, "gpubench: sample %d of %zu B lacks ranks\n", i, s->bytes);
					failed = 1;
					continue;
				}
				fprintf(sf, "%s,%zu,%s,%s,%d,%d,%d,%.3f,%s,%s,%d,%d\n", gb_coll_nccl_name(s->coll),
					s->bytes, algo, proto, channels, nranks, o.nodes, s->us[i], policy, config,
					s->rep, i);
			}
		}
		if (fclose(sf)) { perror(o.samples_path); failed = 1; }
	}
	/* Step times, only for complete, correct runs */
	if (o.n_step_calls && o.steps_path && !failed && !errors) {
		FILE *sf = fopen(o.steps_path, "a");
		if (!sf) { perror(o.steps_path); return 1; }
		char wbuf[128], pbuf2[128], cbuf[128];
		const char *wl = gb_csv_safe(o.workload, "step", wbuf, sizeof(wbuf));
		const char *pol = gb_csv_safe(o.policy, "", pbuf2, sizeof(pbuf2));
		const char *cfg = gb_csv_safe(o.label, "", cbuf, sizeof(cbuf));
		if (ftell(sf) == 0)
			fprintf(sf, "workload,nnodes,nranks,config,policy,rep,step,time_us\n");
		for (int k = 0; k < n_step_series; k++) {
			struct gb_series *s = &step_series[k];
			for (int i = 0; i < s->n; i++) {
				if (s->ranks[i] != o.procs) {
					fprintf(stderr, "gpubench: step %d lacks ranks\n", i);
					failed = 1;
					continue;
				}
				fprintf(sf, "%s,%d,%d,%s,%s,%d,%d,%.3f\n", wl, o.nodes, nranks, cfg, pol, s->rep, i,
					s->us[i]);
			}
		}
		if (fclose(sf)) { perror(o.steps_path); failed = 1; }
	}
	/* the verdict names what failed: a run without a GPU driver computed nothing, it did
	 * not compute "0 wrong elements" */
	if (errors)
		printf("# check: FAILED (%ld wrong elements)\n", errors);
	else if (n_all == 0)
		printf("# check: FAILED: no result came back (%d of %d rank processes failed; the "
		       "lines above say why, e.g. no CUDA driver or GPU)\n", ranks_failed, o.procs);
	else if (failed || missing)
		printf("# check: FAILED: %d rank process(es) failed, %ld result(s) incomplete (the "
		       "results that came back are correct; the lines above say what failed)\n", ranks_failed, missing);
	else
		printf("# check: all results correct\n");
	return errors || missing || failed || n_all == 0 ? 1 : 0;
}

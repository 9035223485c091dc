/* The published view of agreed maps for `ncclbpf ctl dump` (runtime/control.h): per
 * communicator, the version its tuner reads now. Run on the control thread under the
 * registry lock, which the service thread holds when it frees versions (agree_group.c
 * reclaim), so the version read here stays allocated while it is copied out. */
#include <pthread.h>
#include <stdatomic.h>

#include "agree/agree_internal.h"
#include "runtime/control.h"

static void views(uint32_t slot, uint64_t generation, runtime_agreed_view_cb cb, void *arg)
{
	agree_registry_lock();
	for (size_t i = 0; i < AGREE_MAX_COMMS; i++) {
		struct agree_comm *ac = agree_registry_at(i);
		if (!ac || !atomic_load_explicit(&ac->streams_ready, memory_order_acquire))
			continue;
		for (uint32_t k = 0; k < ac->n_streams; k++) {
			struct agree_stream *s = &ac->streams[k];
			if (s->slot != slot || s->desc.generation != generation)
				continue;
			uint64_t active = atomic_load_explicit(&s->active_number, memory_order_acquire);
			const struct agree_version *v = atomic_load(&s->first);
			while (v && v->number < active)
				v = atomic_load(&v->next);
			uint64_t fb = atomic_load(&ac->fallback_seq);
			struct runtime_agreed_view view = {
				.comm_id = ac->comm_id,
				.version = v && v->number == active ? active : 0,
				.activation_seq = v && v->number == active ? v->activation : 0,
				.tuner_seq = atomic_load(&ac->tuner_seq),
				.fallback = fb != AGREE_NO_FALLBACK,
				.fallback_seq = fb,
				.data = v && v->number == active ? v->data : NULL,
				.stride = s->desc.stride,
			};
			cb(&view, arg);
		}
	}
	agree_registry_unlock();
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static void do_register(void)
{
	runtime_agreed_view_provider(views);
}

void agree_view_register(void)
{
	pthread_once(&once, do_register);
}

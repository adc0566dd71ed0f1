/*
 * tau/mem.h - releasing several allocations in one statement.
 *
 * A destructor that owns many strings names them once:
 *
 *   tau_free_many(cfg->server, cfg->ca_file, cfg->token);
 *   free(cfg);
 *
 * The list is a compound literal, so its length is counted by the compiler;
 * NULL entries are fine (free(NULL) does nothing).
 */
#ifndef TAU_MEM_H
#define TAU_MEM_H

#include <stddef.h>

/** free() each of the n pointers in ptrs; ptrs itself is not freed. */
void tau_free_each(void *const *ptrs, size_t n);

/** free() every argument (pointers to heap memory or NULL). */
#define tau_free_many(...)                                                                         \
	tau_free_each((void *const[]){__VA_ARGS__},                                                \
	              sizeof((void *const[]){__VA_ARGS__}) / sizeof(void *))

/** The number of elements of a true array (not a pointer). */
#define TAU_N_ELEMENTS(a) (sizeof(a) / sizeof((a)[0]))

#endif /* TAU_MEM_H */

/*
 * tau/kube_leader.h - leader election on a coordination.k8s.io/v1 Lease,
 * following client-go's leaderelection algorithm.
 *
 * A candidate tries to acquire the Lease every retry period (jittered by
 * 1.2); it may take it when it is free, or when the record it observed has
 * not changed for a whole leaseDurationSeconds by its own clock.  The
 * leader renews every retry period; if no renewal succeeds within the renew
 * deadline it stops leading: on_stopped runs, tau_kube_leader_lost()
 * becomes true, and the elector does not try again (the program is
 * expected to exit and restart, as controller-runtime does).
 * Requirements: lease_duration > renew_deadline > 1.2 * retry_period.
 *
 * The elector runs on its own thread with blocking REST calls; the
 * callbacks run on that thread and should only signal the program's own
 * loops (they must not call tau_kube_leader_stop or _free).
 */
#ifndef TAU_KUBE_LEADER_H
#define TAU_KUBE_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "tau/kube.h"

typedef struct tau_kube_leader tau_kube_leader;

/** Elector settings; zeroed durations take the controller-runtime defaults. */
typedef struct tau_kube_leader_config {
	const char *namespace;      /**< Lease namespace (required) */
	const char *name;           /**< Lease name (required) */
	const char *identity;       /**< this candidate, unique (required), e.g. "<host>_<uuid>" */
	uint64_t lease_duration_ms; /**< [15000] */
	uint64_t renew_deadline_ms; /**< [10000] */
	uint64_t retry_period_ms;   /**< [2000] */
	bool release_on_cancel;     /**< on stop, hand the Lease back (holderIdentity "") */
	void (*on_started)(void *arg); /**< became leader */
	void (*on_stopped)(void *arg); /**< stopped leading (lost, or stopped while leading) */
	void (*on_new_leader)(void *arg, const char *identity); /**< observed holder changed */
	void *arg;
} tau_kube_leader_config;

/**
 * Make an elector (not started).  `client` is borrowed; strings are copied.
 * @return 0, -TAU_EINVAL (missing field or durations out of order), -TAU_ENOMEM.
 */
int tau_kube_leader_new(tau_kube_leader **out, tau_kube_client *client,
                        const tau_kube_leader_config *cfg);

/** Start campaigning on a new thread.  @return 0 or -TAU_EIO. */
int tau_kube_leader_start(tau_kube_leader *le);

/**
 * Stop campaigning and wait for the thread; if leading, release the Lease
 * when configured to and call on_stopped.  Safe to call more than once.
 */
void tau_kube_leader_stop(tau_kube_leader *le);

/** True while this candidate holds the Lease. */
bool tau_kube_leader_is_leader(tau_kube_leader *le);

/** True once leadership was lost through a failed renewal. */
bool tau_kube_leader_lost(tau_kube_leader *le);

/** Stop (if needed) and free; NULL is a no-op. */
void tau_kube_leader_free(tau_kube_leader *le);

/**
 * Format a wall-clock time in microseconds as a Kubernetes MicroTime
 * ("2025-06-01T10:05:42.123456Z") into buf (at least 32 bytes).
 */
void tau_kube_leader_microtime(char *buf, size_t cap, uint64_t wall_us);

#endif /* TAU_KUBE_LEADER_H */

/*
 * workspace/allowlist_file.h - follow a namespace allowlist file.
 *
 * The file (a JSON array of namespace names, tau_ws_namespace_allowlist_parse) is
 * read when followed and again whenever its folder changes (a ConfigMap
 * update swaps a symlink there, so the folder is watched, not the file).
 * A file that cannot be read or parsed keeps the previous list.  The path
 * may change at any time (the flag, or TauCluster's namespaceAllowlist.file
 * as the cluster object changes); one thread follows the current one.
 */
#ifndef TAU_AGGREGATOR_WORKSPACE_ALLOWLIST_FILE_H
#define TAU_AGGREGATOR_WORKSPACE_ALLOWLIST_FILE_H

#include "namespace.h"

#include <stdbool.h>

typedef struct tau_ws_allowlist_file tau_ws_allowlist_file;

/**
 * Make a follower (no thread until the first follow).  `changed` (may be
 * NULL) is called on the watcher thread after a reload caused by a change.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_ws_allowlist_file_new(tau_ws_allowlist_file **out, void (*changed)(void *arg), void *arg);

/**
 * Follow `path` (NULL: follow nothing, the list becomes empty).  The same
 * path again is a no-op; a new one is read now, before returning, and its
 * folder watched from then on.  Thread-safe.
 * @return 0, -TAU_EIO (the watcher thread could not start), -TAU_ENOMEM.
 */
int tau_ws_allowlist_file_follow(tau_ws_allowlist_file *f, const char *path);

/**
 * A copy of the current list (tau_ws_namespace_allowlist_free).  Thread-safe.
 * @param loaded  set false when no read of the current file has succeeded
 *                yet (the copy is then empty: nothing allowed); may be NULL.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_ws_allowlist_file_copy(tau_ws_allowlist **out, bool *loaded, tau_ws_allowlist_file *f);

/** Stop the watcher thread and free; NULL is a no-op. */
void tau_ws_allowlist_file_free(tau_ws_allowlist_file *f);

#endif /* TAU_AGGREGATOR_WORKSPACE_ALLOWLIST_FILE_H */

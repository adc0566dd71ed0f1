/*
 * tau/kubeconfig.h - kubeconfig files: parse, merge, resolve a context.
 *
 * Parsing takes bytes and returns a document (no I/O), so it is unit-tested
 * and fuzzed directly.  Several files (KUBECONFIG=a:b:c) merge the way
 * kubectl does: the first file to define a cluster, user or context name,
 * or a current-context, wins.  Resolving a context gives a tau_kube_config
 * with inline *-data decoded and file references made absolute against the
 * directory of the file that named them; tau_kube_config_read_files() then
 * loads those files.
 */
#ifndef TAU_KUBECONFIG_H
#define TAU_KUBECONFIG_H

#include <stddef.h>

#include "tau/kube.h"

/** Largest kubeconfig file accepted, in bytes. */
#define TAU_KUBECONFIG_MAX_BYTES (4u * 1024u * 1024u)

typedef struct tau_kubeconfig tau_kubeconfig;

/**
 * Parse one kubeconfig document.
 * @param out  receives the document; untouched on failure
 * @param dir  directory that relative paths inside are relative to (NULL: keep as written)
 * @return 0, -TAU_EINVAL (not YAML, or wrong shape; the message names the
 *         entry), -TAU_ETOOBIG (over TAU_KUBECONFIG_MAX_BYTES), -TAU_ENOMEM.
 */
int tau_kubeconfig_parse(tau_kubeconfig **out, const char *buf, size_t len, const char *dir);

/**
 * Read and parse a file; relative paths resolve against its directory.
 * @return as tau_kubeconfig_parse, or -TAU_EIO when the file cannot be read
 *         (the message names the file and the reason).
 */
int tau_kubeconfig_load_file(tau_kubeconfig **out, const char *path);

/**
 * Merge `from` into `into`, first-wins: names already in `into` keep their
 * entry, and `into`'s current-context is kept unless empty.
 * @return 0 or -TAU_ENOMEM.
 */
int tau_kubeconfig_merge(tau_kubeconfig *into, const tau_kubeconfig *from);

/** Lends the current-context, or NULL when unset. */
const char *tau_kubeconfig_current_context(const tau_kubeconfig *kc);

/**
 * Build the configuration of `context` (NULL = current-context).  No I/O.
 * @return 0, -TAU_ENOTFOUND (no such context, or it names a missing cluster
 *         or user, or no context given and none current), -TAU_EINVAL
 *         (cluster without server, bad base64), -TAU_ENOMEM.
 */
int tau_kubeconfig_resolve(tau_kube_config **out, const tau_kubeconfig *kc, const char *context);

/** Free a document; NULL is a no-op. */
void tau_kubeconfig_free(tau_kubeconfig *kc);

/**
 * Load the files a config refers to (ca_file, cert_file, key_file) into the
 * matching *_data fields where those are still empty, and check that
 * token_file is readable.
 * @return 0, -TAU_EIO (unreadable; the message names the file), -TAU_ETOOBIG, -TAU_ENOMEM.
 */
int tau_kube_config_read_files(tau_kube_config *cfg);

#endif /* TAU_KUBECONFIG_H */

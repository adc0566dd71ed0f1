/*
 * allowlist_file.c - follow the namespace allowlist file with inotify.
 *
 * The one idea: one watcher thread sleeps in poll() on the inotify fd of the
 * current file's folder and an eventfd; following another path (or stopping)
 * writes the eventfd, and the thread re-watches the new folder.  The first
 * read of a new path happens in the caller, so a reconcile that starts
 * following a file sees its content in the same pass; the thread reads it
 * again once its watch is in place, so a change in between is not lost.
 */
#define _POSIX_C_SOURCE 200809L
#include "allowlist_file.h"

#include "tau/error.h"
#include "tau/file.h"
#include "tau/log.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

struct tau_ws_allowlist_file {
	void (*changed)(void *arg);
	void *arg;
	pthread_mutex_t mu; /* guards the fields below */
	char *path;         /* followed now; NULL = nothing */
	uint64_t path_gen;  /* bumped by every new path */
	tau_ws_allowlist *list;
	bool loaded;
	bool stopping;
	bool thread_running;
	pthread_t thread;
	int wake_fd;
};

/* Read `path`; on success replace the list if `path` is still the one followed. */
static int reload(tau_ws_allowlist_file *f, const char *path, uint64_t gen, bool first)
{
	tau_ws_allowlist *list = NULL;
	char *buf = NULL, count[32];
	size_t len = 0;
	int rc;

	rc = tau_file_read(&buf, &len, path, TAU_WS_ALLOWLIST_MAX_BYTES, "namespace allowlist");
	if (rc == 0)
		rc = tau_ws_namespace_allowlist_parse(&list, buf, len);
	free(buf);
	if (rc != 0) {
		tau_log_warn(first ? "namespace allowlist unreadable; nothing allowed until it is"
		                   : "namespace allowlist reload failed; keeping the previous list",
		             "file", path, "error", tau_error_last()->msg, NULL);
		return rc;
	}
	snprintf(count, sizeof(count), "%zu", tau_ws_namespace_allowlist_count(list));
	pthread_mutex_lock(&f->mu);
	if (f->path_gen == gen) {
		tau_ws_namespace_allowlist_free(f->list);
		f->list = list;
		f->loaded = true;
		list = NULL;
	}
	pthread_mutex_unlock(&f->mu);
	if (list != NULL) { /* the path changed while reading */
		tau_ws_namespace_allowlist_free(list);
		return 0;
	}
	tau_log_info("namespace allowlist loaded", "file", path, "namespaces", count, NULL);
	return 0;
}

static void folder_of(char *dir, size_t cap, const char *path)
{
	char *slash;

	snprintf(dir, cap, "%s", path);
	slash = strrchr(dir, '/');
	if (slash == NULL)
		snprintf(dir, cap, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
}

static void *watcher_main(void *arg)
{
	tau_ws_allowlist_file *f = arg;
	int ino = -1, wd = -1;
	uint64_t watched_gen = UINT64_MAX;
	char path[PATH_MAX] = "";

	for (;;) {
		struct pollfd pfd[2] = {{f->wake_fd, POLLIN, 0}, {-1, POLLIN, 0}};
		uint64_t gen;
		bool stop, have;

		pthread_mutex_lock(&f->mu);
		stop = f->stopping;
		gen = f->path_gen;
		have = f->path != NULL;
		if (have)
			snprintf(path, sizeof(path), "%s", f->path);
		pthread_mutex_unlock(&f->mu);
		if (stop)
			break;
		if (gen != watched_gen) {
			char dir[PATH_MAX];

			if (ino >= 0)
				close(ino);
			ino = wd = -1;
			watched_gen = gen;
			if (have) {
				folder_of(dir, sizeof(dir), path);
				ino = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
				if (ino >= 0)
					wd = inotify_add_watch(ino, dir,
					                       IN_CLOSE_WRITE | IN_MOVED_TO |
					                               IN_CREATE | IN_DELETE |
					                               IN_MODIFY | IN_ATTRIB);
				if (wd < 0)
					tau_log_error(
					        "namespace allowlist: cannot watch its folder; "
					        "changes are not followed",
					        "folder", dir, "error", strerror(errno), NULL);
				/* A change between the caller's first read and this watch would
				 * otherwise be missed: read once more now that we watch. */
				else if (reload(f, path, gen, false) == 0 && f->changed != NULL)
					f->changed(f->arg);
			}
		}
		pfd[1].fd = wd >= 0 ? ino : -1;
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			tau_log_error("namespace allowlist watcher failed", "error",
			              strerror(errno), NULL);
			break;
		}
		if (pfd[0].revents != 0) {
			uint64_t v;

			if (read(f->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
				tau_log_debug("allowlist watcher wake read failed", NULL);
			continue;
		}
		if (pfd[1].revents != 0) {
			char ev[4096];

			while (read(ino, ev, sizeof(ev)) > 0) {
			}
			if (reload(f, path, watched_gen, false) == 0 && f->changed != NULL)
				f->changed(f->arg);
		}
	}
	if (ino >= 0)
		close(ino);
	return NULL;
}

int tau_ws_allowlist_file_new(tau_ws_allowlist_file **out, void (*changed)(void *arg), void *arg)
{
	tau_ws_allowlist_file *f = calloc(1, sizeof(*f));

	if (f == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory");
	pthread_mutex_init(&f->mu, NULL);
	f->changed = changed;
	f->arg = arg;
	f->wake_fd = -1;
	*out = f;
	return 0;
}

static void wake(tau_ws_allowlist_file *f)
{
	uint64_t one = 1;

	if (f->wake_fd >= 0 && write(f->wake_fd, &one, sizeof(one)) < 0)
		tau_log_debug("allowlist watcher wake-up failed", NULL);
}

int tau_ws_allowlist_file_follow(tau_ws_allowlist_file *f, const char *path)
{
	char *copy = NULL;
	uint64_t gen;
	int rc = 0;

	pthread_mutex_lock(&f->mu);
	if ((path == NULL && f->path == NULL) ||
	    (path != NULL && f->path != NULL && strcmp(path, f->path) == 0)) {
		pthread_mutex_unlock(&f->mu);
		return 0;
	}
	if (path != NULL && (copy = strdup(path)) == NULL) {
		pthread_mutex_unlock(&f->mu);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	free(f->path);
	f->path = copy;
	gen = ++f->path_gen;
	tau_ws_namespace_allowlist_free(f->list);
	f->list = NULL;
	f->loaded = false;
	if (path != NULL && !f->thread_running) {
		f->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (f->wake_fd < 0 || pthread_create(&f->thread, NULL, watcher_main, f) != 0)
			rc = tau_error_set(TAU_EIO, "cannot start the namespace allowlist watcher");
		else
			f->thread_running = true;
	}
	pthread_mutex_unlock(&f->mu);
	if (path != NULL)
		tau_log_info("namespace allowlist: following a file", "file", path, NULL);
	wake(f);
	if (path != NULL)
		(void)reload(f, path, gen, true); /* a failure is logged; the list stays empty */
	return rc;
}

int tau_ws_allowlist_file_copy(tau_ws_allowlist **out, bool *loaded, tau_ws_allowlist_file *f)
{
	const char **names;
	size_t n;
	int rc;

	pthread_mutex_lock(&f->mu);
	n = tau_ws_namespace_allowlist_count(f->list);
	names = calloc(n + 1, sizeof(*names));
	if (names == NULL) {
		pthread_mutex_unlock(&f->mu);
		return tau_error_set(TAU_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		names[i] = tau_ws_namespace_allowlist_name(f->list, i);
	rc = tau_ws_namespace_allowlist_from_names(out, names, n);
	if (loaded != NULL)
		*loaded = f->loaded;
	pthread_mutex_unlock(&f->mu);
	free(names);
	return rc;
}

void tau_ws_allowlist_file_free(tau_ws_allowlist_file *f)
{
	bool join;

	if (f == NULL)
		return;
	pthread_mutex_lock(&f->mu);
	f->stopping = true;
	join = f->thread_running;
	pthread_mutex_unlock(&f->mu);
	if (join) {
		wake(f);
		pthread_join(f->thread, NULL);
	}
	if (f->wake_fd >= 0)
		close(f->wake_fd);
	tau_ws_namespace_allowlist_free(f->list);
	free(f->path);
	pthread_mutex_destroy(&f->mu);
	free(f);
}

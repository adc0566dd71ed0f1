/*
 * registry_watch.c - an inotify watch on kubelet's plugin registry directory.
 *
 * The one idea: the watch follows the directory rather than a fixed inode: when the
 * directory is missing it watches the nearest existing ancestor and moves down as path
 * components appear, and back up when the directory is removed, so a kubelet that starts
 * after the agent is still seen without polling.
 */
#include "hostprobe.h"

#include "tau/error.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

struct tau_agent_registry_watch {
	int fd;                 /* inotify instance */
	int wd;                 /* current watch, -1 when none */
	bool on_parent;         /* watching an ancestor of target */
	char target[PATH_MAX];  /* <root>/var/lib/kubelet/plugins_registry */
	char watched[PATH_MAX]; /* what wd watches now */
};

#define TARGET_MASK                                                                                \
	(IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF |     \
	 IN_ONLYDIR)
#define PARENT_MASK (IN_CREATE | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR)

/* Drop the last component of path in place; false when nothing is left to drop. */
static bool path_up(char *path)
{
	char *slash = strrchr(path, '/');

	if (slash == NULL)
		return false;
	if (slash == path) {
		if (path[1] == '\0')
			return false;
		path[1] = '\0';
		return true;
	}
	*slash = '\0';
	return true;
}

/*
 * Watch the target, or the nearest existing ancestor.  A component may
 * appear between the failed watch and the ancestor's watch, so after arming
 * an ancestor check whether the next component now exists and retry.
 */
static int watch_arm(tau_agent_registry_watch *w)
{
	for (int attempt = 0; attempt < 16; attempt++) {
		char path[PATH_MAX];
		bool on_target = true;
		int wd = -1;

		if (w->wd >= 0) {
			inotify_rm_watch(w->fd, w->wd);
			w->wd = -1;
		}
		memcpy(path, w->target, sizeof(path));
		for (;;) {
			wd = inotify_add_watch(w->fd, path, on_target ? TARGET_MASK : PARENT_MASK);
			if (wd >= 0)
				break;
			if (errno != ENOENT && errno != ENOTDIR)
				return tau_error_set(TAU_EIO, "cannot watch %s: %s", path,
				                     strerror(errno));
			if (!path_up(path))
				return tau_error_set(TAU_EIO, "no existing directory above %s",
				                     w->target);
			on_target = false;
		}
		w->wd = wd;
		w->on_parent = !on_target;
		memcpy(w->watched, path, sizeof(w->watched));
		if (on_target)
			return 0;
		/* Does the next component toward the target exist by now? */
		{
			const char *rest = w->target + strlen(path);
			const char *end;
			char next[PATH_MAX];
			size_t next_len;
			struct stat st;

			if (*rest == '/')
				rest++;
			end = strchr(rest, '/');
			next_len = end != NULL ? (size_t)(end - w->target) : strlen(w->target);
			memcpy(next, w->target, next_len);
			next[next_len] = '\0';
			/* Only a directory can lead on; a file there keeps us on the parent. */
			if (stat(next, &st) != 0 || !S_ISDIR(st.st_mode))
				return 0;
		}
	}
	return tau_error_set(TAU_EIO, "%s keeps changing; cannot settle a watch", w->target);
}

int tau_agent_registry_watch_open(tau_agent_registry_watch **out, const char *host_root)
{
	tau_agent_registry_watch *w;
	int rc;

	if (out == NULL)
		return tau_error_set(TAU_EINVAL, "no place for the watch");
	if (host_root == NULL || host_root[0] == '\0')
		host_root = "/";
	w = calloc(1, sizeof(*w));
	if (w == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory for the registry watch");
	w->wd = -1;
	rc = tau_agent_host_path(w->target, sizeof(w->target), host_root,
	                         TAU_AGENT_PLUGIN_REGISTRY);
	if (rc < 0) {
		free(w);
		return rc;
	}
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (w->fd < 0) {
		rc = tau_error_set(TAU_EIO, "inotify_init1: %s", strerror(errno));
		free(w);
		return rc;
	}
	rc = watch_arm(w);
	if (rc < 0) {
		tau_agent_registry_watch_free(w);
		return rc;
	}
	*out = w;
	return 0;
}

int tau_agent_registry_watch_fd(const tau_agent_registry_watch *w)
{
	return w != NULL ? w->fd : -1;
}

bool tau_agent_registry_watch_on_parent(const tau_agent_registry_watch *w)
{
	return w != NULL && w->on_parent;
}

const char *tau_agent_registry_watch_path(const tau_agent_registry_watch *w)
{
	return w != NULL ? w->watched : NULL;
}

int tau_agent_registry_watch_drain(tau_agent_registry_watch *w)
{
	_Alignas(struct inotify_event) char buf[4096];
	bool rearm = false;
	bool changed = false;
	bool was_on_parent;
	int rc;

	if (w == NULL)
		return tau_error_set(TAU_EINVAL, "no registry watch");
	for (;;) {
		ssize_t len = read(w->fd, buf, sizeof(buf));
		size_t off = 0;

		if (len < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				break;
			return tau_error_set(TAU_EIO, "reading inotify events: %s",
			                     strerror(errno));
		}
		if (len == 0)
			break;
		while (off + sizeof(struct inotify_event) <= (size_t)len) {
			struct inotify_event ev;

			memcpy(&ev, buf + off, sizeof(ev));
			off += sizeof(ev) + ev.len;
			if (ev.mask & IN_Q_OVERFLOW) {
				/* Lost events: assume anything happened. */
				changed = true;
				rearm = true;
				continue;
			}
			if (ev.wd != w->wd)
				continue; /* left over from a watch already replaced */
			if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED | IN_UNMOUNT))
				rearm = true;
			if (!w->on_parent)
				changed = true; /* a socket came or went, or the directory did */
			else if (ev.mask & (IN_CREATE | IN_MOVED_TO))
				rearm = true; /* maybe the next component toward the registry */
		}
	}
	if (rearm) {
		was_on_parent = w->on_parent;
		rc = watch_arm(w);
		if (rc < 0)
			return rc;
		if (was_on_parent != w->on_parent)
			changed = true;
	}
	return changed ? 1 : 0;
}

void tau_agent_registry_watch_free(tau_agent_registry_watch *w)
{
	if (w == NULL)
		return;
	if (w->fd >= 0)
		close(w->fd);
	free(w);
}

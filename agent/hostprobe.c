/*
 * hostprobe.c - local probes of tau-node-agent: kubelet plugin registry,
 * NVIDIA GPUs, InfiniBand ports; and an inotify watch on the registry.
 *
 * The one idea: every host path is <host-root> + a fixed suffix, and every
 * failure to read becomes "unknown + a problem string", never a zero.  A
 * node whose /sys cannot be read must not look like a node without RDMA, and
 * a node without NVML must not look like a node without GPUs; the
 * aggregator decides what to do with unknowns.
 *
 * NVML is optional at run time: agent/nvml.c loads it with dlopen, so the
 * agent builds and runs on machines without the NVIDIA driver; this file only
 * decides which library (TAU_AGENT_NVML) and folds its answer into the counts.
 *
 * The registry watch follows the directory rather than a fixed inode: when
 * the directory is missing it watches the nearest existing ancestor and moves
 * down as path components appear, and back up when the directory is removed,
 * so a kubelet that starts after the agent is still seen without polling.
 */
#include "hostprobe.h"

#include "tau/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOCKET_SUFFIX "-reg.sock"
#define DEV_DIR       "/dev"
#define IB_DIR        "/sys/class/infiniband"
/* A port state file is one short line ("4: ACTIVE\n"). */
#define STATE_FILE_MAX 64

/* ---------------------------------------------------------------- problems */

static int problem_store(tau_agent_problem_list *list, const char *text)
{
	char *copy;

	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->items[i], text) == 0)
			return 0;
	if (list->n < TAU_AGENT_MAX_PROBLEMS) {
		copy = strdup(text);
		if (copy == NULL) {
			list->not_shown++;
			return tau_error_set(TAU_ENOMEM, "out of memory recording a problem");
		}
		list->items[list->n++] = copy;
		return 0;
	}
	/* Full: the last slot becomes a count of what is not shown, itself included. */
	if (list->not_shown == 0)
		list->not_shown = 1;
	list->not_shown++;
	{
		char summary[64];

		snprintf(summary, sizeof(summary), "%zu more problems not shown", list->not_shown);
		copy = strdup(summary);
		if (copy == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory recording a problem");
		free(list->items[TAU_AGENT_MAX_PROBLEMS - 1]);
		list->items[TAU_AGENT_MAX_PROBLEMS - 1] = copy;
	}
	return 0;
}

int tau_agent_problem_addv(tau_agent_problem_list *list, const char *fmt, va_list ap)
{
	char text[TAU_AGENT_PROBLEM_MAX];

	vsnprintf(text, sizeof(text), fmt, ap);
	return problem_store(list, text);
}

int tau_agent_problem_add(tau_agent_problem_list *list, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = tau_agent_problem_addv(list, fmt, ap);
	va_end(ap);
	return rc;
}

int tau_agent_problem_add_text(tau_agent_problem_list *list, const char *text)
{
	return tau_agent_problem_add(list, "%s", text);
}

void tau_agent_problem_list_free(tau_agent_problem_list *list)
{
	if (list == NULL)
		return;
	for (size_t i = 0; i < list->n; i++)
		free(list->items[i]);
	memset(list, 0, sizeof(*list));
}

bool tau_agent_problem_list_has(const tau_agent_problem_list *list, const char *text)
{
	for (size_t i = 0; i < list->n; i++)
		if (strcmp(list->items[i], text) == 0)
			return true;
	return false;
}

int tau_agent_problem_list_copy(tau_agent_problem_list *dst, const tau_agent_problem_list *src)
{
	tau_agent_problem_list_free(dst);
	for (size_t i = 0; i < src->n; i++) {
		dst->items[i] = strdup(src->items[i]);
		if (dst->items[i] == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory");
		dst->n++;
	}
	dst->not_shown = src->not_shown;
	return 0;
}

/* ------------------------------------------------------------------ paths */

int tau_agent_host_path(char *buf, size_t cap, const char *root, const char *rel)
{
	size_t rlen;
	int n;

	if (root == NULL)
		root = "";
	rlen = strlen(root);
	while (rlen > 0 && root[rlen - 1] == '/')
		rlen--;
	if (rlen > INT_MAX)
		return tau_error_set(TAU_ETOOBIG, "host root is too long");
	n = snprintf(buf, cap, "%.*s%s", (int)rlen, root, rel);
	if (n < 0 || (size_t)n >= cap)
		return tau_error_set(TAU_ETOOBIG, "host path %.*s%s is too long", (int)rlen, root,
		                     rel);
	return 0;
}

/* A driver name usable as one path component: no '/', not "." or "..". */
static bool driver_name_is_component(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > NAME_MAX - strlen(SOCKET_SUFFIX))
		return false;
	if (strchr(name, '/') != NULL)
		return false;
	return strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* ------------------------------------------------------- plugin registry */

static int probe_sockets(tau_agent_host_probe *p, const char *root, const char *const *names,
                         size_t n)
{
	char dir[PATH_MAX];
	int dfd = -1;
	int open_errno = 0;
	int rc;

	if (n == 0)
		return 0;
	p->sockets = calloc(n < TAU_AGENT_PROBE_MAX_DRIVERS ? n : TAU_AGENT_PROBE_MAX_DRIVERS,
	                    sizeof(*p->sockets));
	if (p->sockets == NULL)
		return tau_error_set(TAU_ENOMEM, "out of memory probing plugin sockets");

	rc = tau_agent_host_path(dir, sizeof(dir), root, TAU_AGENT_PLUGIN_REGISTRY);
	if (rc < 0) {
		tau_agent_problem_add(&p->problems, "%s", tau_error_last()->msg);
		open_errno = ENAMETOOLONG;
	} else {
		dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd < 0) {
			open_errno = errno;
			if (open_errno == ENOENT)
				tau_agent_problem_add(&p->problems,
				                      "plugin registry %s does not exist", dir);
			else
				tau_agent_problem_add(&p->problems,
				                      "cannot open plugin registry %s: %s", dir,
				                      strerror(open_errno));
		}
	}

	for (size_t i = 0; i < n; i++) {
		const char *name = names[i];
		tau_agent_driver_socket *slot;
		char file[NAME_MAX + 1];
		struct stat st;
		bool seen = false;

		if (name == NULL)
			continue;
		for (size_t j = 0; j < p->n_sockets && !seen; j++)
			seen = strcmp(p->sockets[j].driver, name) == 0;
		if (seen)
			continue;
		if (p->n_sockets == TAU_AGENT_PROBE_MAX_DRIVERS) {
			tau_agent_problem_add(&p->problems,
			                      "more than %d CSI drivers to probe; %s and later "
			                      "ones not probed",
			                      TAU_AGENT_PROBE_MAX_DRIVERS, name);
			break;
		}
		slot = &p->sockets[p->n_sockets];
		slot->driver = strdup(name);
		if (slot->driver == NULL) {
			rc = tau_error_set(TAU_ENOMEM, "out of memory probing plugin sockets");
			goto out;
		}
		p->n_sockets++;
		slot->state = TAU_AGENT_SOCKET_UNKNOWN;
		if (!driver_name_is_component(name)) {
			tau_agent_problem_add(
			        &p->problems,
			        "CSI driver name \"%.200s\" cannot name a registration "
			        "socket; not probed",
			        name);
			continue;
		}
		if (dfd < 0) {
			/* A missing registry means no registrar has run: absent, not unknown. */
			if (open_errno == ENOENT)
				slot->state = TAU_AGENT_SOCKET_ABSENT;
			continue;
		}
		snprintf(file, sizeof(file), "%s%s", name, SOCKET_SUFFIX);
		if (fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISSOCK(st.st_mode)) {
				slot->state = TAU_AGENT_SOCKET_PRESENT;
			} else {
				slot->state = TAU_AGENT_SOCKET_ABSENT;
				tau_agent_problem_add(&p->problems,
				                      "%s/%s exists but is not a socket", dir,
				                      file);
			}
		} else if (errno == ENOENT) {
			slot->state = TAU_AGENT_SOCKET_ABSENT;
		} else {
			tau_agent_problem_add(&p->problems, "cannot stat %s/%s: %s", dir, file,
			                      strerror(errno));
		}
	}
	rc = 0;
out:
	if (dfd >= 0)
		close(dfd);
	return rc;
}

/* ------------------------------------------------------------ GPU nodes */

/* "nvidia" followed by one or more digits and nothing else: nvidia0, nvidia12. */
static bool is_gpu_device_name(const char *name)
{
	const char *d;

	if (strncmp(name, "nvidia", 6) != 0)
		return false;
	d = name + 6;
	if (*d == '\0')
		return false;
	for (; *d != '\0'; d++)
		if (*d < '0' || *d > '9')
			return false;
	return true;
}

static void probe_gpu_device_nodes(tau_agent_host_probe *p, const char *root)
{
	char dir[PATH_MAX];
	struct dirent *de;
	int64_t count = 0;
	DIR *d;

	if (tau_agent_host_path(dir, sizeof(dir), root, DEV_DIR) < 0) {
		tau_agent_problem_add(&p->problems, "%s", tau_error_last()->msg);
		return;
	}
	d = opendir(dir);
	if (d == NULL) {
		tau_agent_problem_add(&p->problems, "cannot list %s: %s", dir, strerror(errno));
		return;
	}
	/*
	 * Character devices on a real host; any non-directory is counted so tests
	 * can build fake trees without mknod.
	 */
	while ((de = readdir(d)) != NULL) {
		bool is_dir = de->d_type == DT_DIR;

		if (!is_gpu_device_name(de->d_name))
			continue;
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
				continue;
			is_dir = S_ISDIR(st.st_mode);
		}
		if (!is_dir)
			count++;
	}
	closedir(d);
	p->gpu_device_nodes = count;
}

/* -------------------------------------------------------------------- NVML */

void tau_agent_note_set(char **note, const char *fmt, ...)
{
	char text[TAU_AGENT_PROBLEM_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	free(*note);
	*note = strdup(text);
}

/* NVML through agent/nvml.c; TAU_AGENT_NVML picks the library or turns it off. */
static int probe_nvml(tau_agent_host_probe *p)
{
	const char *setting = getenv(TAU_AGENT_NVML_ENV);
	const char *library = TAU_AGENT_NVML_SONAME;
	int rc;

	if (setting != NULL) {
		if (setting[0] == '\0' || strcmp(setting, "off") == 0 ||
		    strcmp(setting, "0") == 0 || strcmp(setting, "false") == 0) {
			tau_agent_note_set(&p->nvml_note, "NVML disabled by %s=%s",
			                   TAU_AGENT_NVML_ENV, setting);
			return 0;
		}
		library = setting;
	}
	rc = tau_agent_nvml_probe_bounded(&p->nvml, library, TAU_AGENT_NVML_TIMEOUT_MS);
	if (rc < 0)
		return rc;
	if (!p->nvml.probed) {
		tau_agent_note_set(&p->nvml_note, "%s",
		                   p->nvml.note != NULL ? p->nvml.note : "NVML not probed");
		return 0;
	}
	p->nvml_probed = true;
	p->nvml_gpus = p->nvml.count;
	p->nvml_healthy = tau_agent_nvml_healthy(&p->nvml);
	if (p->nvml.count > p->nvml.n_gpus)
		tau_agent_problem_add(&p->problems,
		                      "NVML reports %u GPUs; only the first %zu are described",
		                      p->nvml.count, p->nvml.n_gpus);
	return 0;
}

/* ------------------------------------------------------------------- RDMA */

int tau_agent_rdma_state_is_up(const char *text, size_t len)
{
	int state;
	size_t i = 0;

	if (text == NULL)
		return tau_error_set(TAU_EINVAL, "no port state text");
	/* The "<number>: <name>" syntax is tau_agent_sysfs_numbered's; a port state adds the
	 * kernel's upper-case names and the range 1..5 (DOWN .. ACTIVE_DEFER). */
	state = tau_agent_sysfs_numbered(text, len);
	while (state >= 0 && i < len && text[i] != ':')
		i++;
	for (i++; i < len && text[i] == ' '; i++)
		;
	for (; state >= 0 && i < len && text[i] != '\n' && text[i] != ' '; i++)
		if (!((text[i] >= 'A' && text[i] <= 'Z') || text[i] == '_'))
			state = -1;
	if (state < 1 || state > 5) {
		/* Quote at most 32 bytes, without the trailing newline. */
		while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
			len--;
		return tau_error_set(TAU_EINVAL, "port state \"%.*s\" is not \"<number>: <NAME>\"",
		                     (int)(len < 32 ? len : 32), text);
	}
	return state == 4 ? 1 : 0;
}

/* Read a short file into buf (NUL-terminated). Returns length or -errno. */
static ssize_t read_small_file(const char *path, char *buf, size_t cap)
{
	size_t got = 0;
	/* O_NONBLOCK: a FIFO planted in the tree must not hang the probe. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

	if (fd < 0)
		return -errno;
	while (got + 1 < cap) {
		ssize_t r = read(fd, buf + got, cap - 1 - got);

		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

static bool is_dot_entry(const char *name)
{
	return name[0] == '.';
}

int tau_agent_sysfs_numbered(const char *text, size_t len)
{
	size_t i = 0, start;
	int number = 0;
	size_t digits = 0;

	if (text == NULL)
		return tau_error_set(TAU_EINVAL, "no text");
	while (i < len && text[i] >= '0' && text[i] <= '9' && digits < 4) {
		number = number * 10 + (text[i] - '0');
		i++;
		digits++;
	}
	if (digits == 0 || i >= len || text[i] != ':')
		goto bad;
	i++;
	while (i < len && text[i] == ' ')
		i++;
	start = i;
	while (i < len &&
	       ((text[i] >= 'A' && text[i] <= 'Z') || (text[i] >= 'a' && text[i] <= 'z') ||
	        (text[i] >= '0' && text[i] <= '9') || text[i] == '_'))
		i++;
	if (i == start)
		goto bad;
	while (i < len && (text[i] == '\n' || text[i] == ' '))
		i++;
	if (i != len)
		goto bad;
	return number;
bad:
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		len--;
	return tau_error_set(TAU_EINVAL, "\"%.*s\" is not \"<number>: <Name>\"",
	                     (int)(len < 32 ? len : 32), text);
}

int tau_agent_rdma_rate_mbps(int64_t *mbps, const char *text, size_t len)
{
	int64_t whole = 0, frac = 0;
	size_t i = 0, digits = 0, decimals = 0;

	if (mbps == NULL || text == NULL)
		return tau_error_set(TAU_EINVAL, "no rate text");
	while (i < len && text[i] >= '0' && text[i] <= '9' && digits < 9) {
		whole = whole * 10 + (text[i] - '0');
		i++;
		digits++;
	}
	if (digits == 0)
		goto bad;
	if (i < len && text[i] == '.') {
		i++;
		while (i < len && text[i] >= '0' && text[i] <= '9') {
			if (decimals == 3)
				goto bad;
			frac = frac * 10 + (text[i] - '0');
			decimals++;
			i++;
		}
	}
	while (decimals < 3) {
		frac *= 10;
		decimals++;
	}
	if (len - i < 7 || memcmp(text + i, " Gb/sec", 7) != 0)
		goto bad;
	*mbps = whole * 1000 + frac;
	return 0;
bad:
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		len--;
	return tau_error_set(TAU_EINVAL, "rate \"%.*s\" is not \"<number> Gb/sec ...\"",
	                     (int)(len < 32 ? len : 32), text);
}

/*
 * Read <ports>/<port>/<file> into text; false when it cannot be read, with a problem unless
 * `optional` and the file does not exist (older kernels and fake trees lack some files: the
 * field is then unknown, which the JSON and the wire already say).
 */
static bool read_port_file(tau_agent_host_probe *p, const char *port_dir, const char *file,
                           bool optional, char *text, size_t cap, ssize_t *len_out)
{
	char path[PATH_MAX];
	ssize_t len;
	int n = snprintf(path, sizeof(path), "%s/%s", port_dir, file);

	if (n < 0 || (size_t)n >= sizeof(path)) {
		tau_agent_problem_add(&p->problems, "path of RDMA port file %s/%s is too long",
		                      port_dir, file);
		return false;
	}
	len = read_small_file(path, text, cap);
	if (len < 0) {
		if (!(optional && len == -ENOENT))
			tau_agent_problem_add(&p->problems, "cannot read %s: %s", path,
			                      strerror((int)-len));
		return false;
	}
	*len_out = len;
	return true;
}

/* A sysfs text without its trailing newline and blanks, copied; NULL when out of memory. */
static char *trimmed_copy(const char *text, size_t len)
{
	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		len--;
	return strndup(text, len);
}

/*
 * The details of one port beyond its state (which the caller counted): phys_state, rate,
 * link_layer, counters/link_downed.  Each is optional: a missing file leaves it unknown; one
 * that exists but cannot be read or parsed adds a problem.
 */
static int describe_rdma_port(tau_agent_host_probe *p, tau_agent_rdma_port *port,
                              const char *port_dir, int state)
{
	char text[STATE_FILE_MAX];
	ssize_t len = 0;
	int v;

	port->state = state;
	port->phys_state = -1;
	port->rate_mbps = -1;
	port->link_downed = -1;
	if (read_port_file(p, port_dir, "phys_state", true, text, sizeof(text), &len)) {
		v = tau_agent_sysfs_numbered(text, (size_t)len);
		if (v < 0)
			tau_agent_problem_add(&p->problems, "%s/phys_state: %s", port_dir,
			                      tau_error_last()->msg);
		else
			port->phys_state = v;
	}
	if (read_port_file(p, port_dir, "rate", true, text, sizeof(text), &len)) {
		port->rate = trimmed_copy(text, (size_t)len);
		if (port->rate == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory describing RDMA ports");
		if (tau_agent_rdma_rate_mbps(&port->rate_mbps, text, (size_t)len) < 0)
			tau_agent_problem_add(&p->problems, "%s/rate: %s", port_dir,
			                      tau_error_last()->msg);
	}
	if (read_port_file(p, port_dir, "link_layer", true, text, sizeof(text), &len)) {
		port->link_layer = trimmed_copy(text, (size_t)len);
		if (port->link_layer == NULL)
			return tau_error_set(TAU_ENOMEM, "out of memory describing RDMA ports");
	}
	if (read_port_file(p, port_dir, "counters/link_downed", true, text, sizeof(text), &len)) {
		int64_t count;
		char *end = NULL;

		while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
			text[--len] = '\0';
		errno = 0;
		count = strtoll(text, &end, 10);
		if (errno != 0 || end == text || end == NULL || *end != '\0' || count < 0)
			tau_agent_problem_add(&p->problems,
			                      "%s/counters/link_downed: \"%.32s\" is not a count",
			                      port_dir, text);
		else
			port->link_downed = count;
	}
	return 0;
}

/* Count the ports of one device directory; 0, 1 when the limit was hit, or -TAU_ENOMEM. */
static int probe_rdma_device(tau_agent_host_probe *p, const char *ib_dir, const char *dev,
                             int64_t *total, int64_t *up)
{
	char ports[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int n;

	n = snprintf(ports, sizeof(ports), "%s/%s/ports", ib_dir, dev);
	if (n < 0 || (size_t)n >= sizeof(ports)) {
		tau_agent_problem_add(&p->problems, "path of RDMA device %.100s is too long", dev);
		return 0;
	}
	d = opendir(ports);
	if (d == NULL) {
		tau_agent_problem_add(&p->problems, "cannot list %s: %s", ports, strerror(errno));
		return 0;
	}
	while ((de = readdir(d)) != NULL) {
		char port_dir[PATH_MAX];
		char text[STATE_FILE_MAX];
		ssize_t len;
		int is_up, state = -1;

		if (is_dot_entry(de->d_name))
			continue;
		if (*total >= TAU_AGENT_PROBE_MAX_RDMA_PORTS) {
			closedir(d);
			return 1;
		}
		(*total)++;
		n = snprintf(port_dir, sizeof(port_dir), "%s/%s", ports, de->d_name);
		if (n < 0 || (size_t)n >= sizeof(port_dir)) {
			tau_agent_problem_add(&p->problems,
			                      "path of RDMA port %s/%.100s is too long", ports,
			                      de->d_name);
			continue;
		}
		if (read_port_file(p, port_dir, "state", false, text, sizeof(text), &len)) {
			is_up = tau_agent_rdma_state_is_up(text, (size_t)len);
			if (is_up < 0) {
				tau_agent_problem_add(&p->problems, "%s/state: %s", port_dir,
				                      tau_error_last()->msg);
			} else {
				*up += is_up;
				state = tau_agent_sysfs_numbered(text, (size_t)len);
			}
		}
		if (p->n_rdma_ports == TAU_AGENT_PROBE_MAX_RDMA_PORT_DETAILS) {
			tau_agent_problem_add(
			        &p->problems,
			        "more than %d RDMA ports; only the first %d described",
			        TAU_AGENT_PROBE_MAX_RDMA_PORT_DETAILS,
			        TAU_AGENT_PROBE_MAX_RDMA_PORT_DETAILS);
			continue;
		}
		{
			tau_agent_rdma_port *port = &p->rdma_ports[p->n_rdma_ports];

			memset(port, 0, sizeof(*port));
			port->device = strdup(dev);
			port->port = strdup(de->d_name);
			p->n_rdma_ports++;
			if (port->device == NULL || port->port == NULL ||
			    describe_rdma_port(p, port, port_dir, state) < 0) {
				closedir(d);
				return tau_error_set(TAU_ENOMEM,
				                     "out of memory describing RDMA ports");
			}
		}
	}
	closedir(d);
	return 0;
}

static int rdma_port_cmp(const void *a, const void *b)
{
	const tau_agent_rdma_port *x = a, *y = b;
	int c = strcmp(x->device, y->device);
	size_t lx, ly;

	if (c != 0)
		return c;
	/* Ports are numbers: "2" before "10". */
	lx = strlen(x->port);
	ly = strlen(y->port);
	if (lx != ly)
		return lx < ly ? -1 : 1;
	return strcmp(x->port, y->port);
}

static const size_t PORT_STRINGS[] = {
        offsetof(tau_agent_rdma_port, device),
        offsetof(tau_agent_rdma_port, port),
        offsetof(tau_agent_rdma_port, rate),
        offsetof(tau_agent_rdma_port, link_layer),
};

void tau_agent_rdma_ports_free(tau_agent_rdma_port *ports, size_t n)
{
	tau_agent_records_free(ports, n, sizeof(*ports), TAU_AGENT_RECORD_STRINGS(PORT_STRINGS));
}

int tau_agent_rdma_ports_copy(tau_agent_rdma_port **out, const tau_agent_rdma_port *ports, size_t n)
{
	void *copy = NULL;
	int rc = tau_agent_records_copy(&copy, ports, n, sizeof(*ports),
	                                TAU_AGENT_RECORD_STRINGS(PORT_STRINGS), "RDMA ports");

	*out = copy;
	return rc;
}

static int probe_rdma(tau_agent_host_probe *p, const char *root)
{
	char dir[PATH_MAX];
	int64_t total = 0, up = 0;
	struct dirent *de;
	DIR *d;

	if (tau_agent_host_path(dir, sizeof(dir), root, IB_DIR) < 0) {
		tau_agent_problem_add(&p->problems, "%s", tau_error_last()->msg);
		return 0;
	}
	d = opendir(dir);
	if (d == NULL) {
		if (errno == ENOENT) {
			/* No InfiniBand class: no RDMA devices (module not loaded). */
			p->rdma_ports_total = 0;
			p->rdma_ports_up = 0;
			return 0;
		}
		tau_agent_problem_add(&p->problems, "cannot list %s: %s", dir, strerror(errno));
		return 0;
	}
	p->rdma_ports = calloc(TAU_AGENT_PROBE_MAX_RDMA_PORT_DETAILS, sizeof(*p->rdma_ports));
	if (p->rdma_ports == NULL) {
		closedir(d);
		return tau_error_set(TAU_ENOMEM, "out of memory describing RDMA ports");
	}
	while ((de = readdir(d)) != NULL) {
		int r;

		if (is_dot_entry(de->d_name))
			continue;
		r = probe_rdma_device(p, dir, de->d_name, &total, &up);
		if (r < 0) {
			closedir(d);
			return r;
		}
		if (r > 0) {
			tau_agent_problem_add(
			        &p->problems,
			        "more than %d RDMA ports under %s; counted the first %d",
			        TAU_AGENT_PROBE_MAX_RDMA_PORTS, dir,
			        TAU_AGENT_PROBE_MAX_RDMA_PORTS);
			break;
		}
	}
	closedir(d);
	qsort(p->rdma_ports, p->n_rdma_ports, sizeof(*p->rdma_ports), rdma_port_cmp);
	p->rdma_ports_total = total;
	p->rdma_ports_up = up;
	return 0;
}

/* ------------------------------------------------------------- CSI live */

/* The live CSI check of every driver whose registration socket is present. */
static int probe_csi_live(tau_agent_host_probe *p, const char *root)
{
	const char *names[TAU_AGENT_PROBE_MAX_DRIVERS];
	size_t n = 0;
	int rc;

	for (size_t i = 0; i < p->n_sockets && n < TAU_AGENT_PROBE_MAX_DRIVERS; i++)
		if (p->sockets[i].state == TAU_AGENT_SOCKET_PRESENT)
			names[n++] = p->sockets[i].driver;
	rc = tau_agent_csi_probe(&p->csi_live, root, names, n, TAU_AGENT_CSI_TIMEOUT_MS,
	                         TAU_AGENT_CSI_BUDGET_MS);
	if (rc < 0)
		return rc;
	p->n_csi_live = p->csi_live != NULL ? n : 0;
	return 0;
}

/* ------------------------------------------------------------- the probe */

void tau_agent_host_probe_init(tau_agent_host_probe *probe)
{
	memset(probe, 0, sizeof(*probe));
	probe->gpu_device_nodes = -1;
	probe->nvml_gpus = -1;
	probe->nvml_healthy = -1;
	probe->rdma_ports_total = -1;
	probe->rdma_ports_up = -1;
	tau_agent_nvml_init(&probe->nvml);
	tau_agent_podres_init(&probe->podres);
}

void tau_agent_host_probe_free(tau_agent_host_probe *probe)
{
	if (probe == NULL)
		return;
	for (size_t i = 0; i < probe->n_sockets; i++)
		free(probe->sockets[i].driver);
	free(probe->sockets);
	free(probe->nvml_note);
	tau_agent_nvml_free(&probe->nvml);
	tau_agent_podres_free(&probe->podres);
	tau_agent_csi_live_free(probe->csi_live, probe->n_csi_live);
	tau_agent_rdma_ports_free(probe->rdma_ports, probe->n_rdma_ports);
	tau_agent_problem_list_free(&probe->problems);
	tau_agent_host_probe_init(probe);
}

int tau_agent_probe_host(tau_agent_host_probe *probe, const char *host_root,
                         const char *const *driver_names, size_t n)
{
	int rc;

	if (probe == NULL)
		return tau_error_set(TAU_EINVAL, "no probe to fill");
	if (driver_names == NULL && n > 0)
		return tau_error_set(TAU_EINVAL, "no driver names");
	tau_agent_host_probe_free(probe);
	if (host_root == NULL || host_root[0] == '\0')
		host_root = "/";

	rc = probe_sockets(probe, host_root, driver_names, n);
	if (rc < 0)
		return rc;
	probe_gpu_device_nodes(probe, host_root);
	rc = probe_nvml(probe);
	if (rc < 0)
		return rc;
	rc = probe_rdma(probe, host_root);
	if (rc < 0)
		return rc;
	rc = tau_agent_podres_probe(&probe->podres, host_root, TAU_AGENT_PODRESOURCES_TIMEOUT_MS);
	if (rc < 0)
		return rc;
	return probe_csi_live(probe, host_root);
}

/* ---------------------------------------------------------- registry watch */

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

/*
 * rdma.c - the InfiniBand and RoCE ports under <host-root>/sys/class/infiniband.
 *
 * The one idea: each port's state, physical state, rate, link layer and link-downed count,
 * read from sysfs defensively: a file that cannot be read or parsed makes that field unknown
 * with a problem, never a zero; a missing class directory means no RDMA devices.
 */
#include "hostprobe.h"

#include "tau/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define IB_DIR "/sys/class/infiniband"
/* A port state file is one short line ("4: ACTIVE\n"). */
#define STATE_FILE_MAX 64

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

int tau_agent_probe_rdma(tau_agent_host_probe *p, const char *root)
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

/*
 * hostprobe.c - the host probe of tau-node-agent: kubelet plugin registry sockets, NVIDIA
 * device nodes, NVML, InfiniBand ports (rdma.c) and the live CSI checks, in one pass.
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
 */
#include "hostprobe.h"

#include "tau/error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SOCKET_SUFFIX "-reg.sock"
#define DEV_DIR       "/dev"

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
	rc = tau_agent_probe_rdma(probe, host_root);
	if (rc < 0)
		return rc;
	rc = tau_agent_podres_probe(&probe->podres, host_root, TAU_AGENT_PODRESOURCES_TIMEOUT_MS);
	if (rc < 0)
		return rc;
	return probe_csi_live(probe, host_root);
}

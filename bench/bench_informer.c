/*
 * bench_informer.c - informer throughput over 10,000 Nodes.
 *
 *   informer [NODES] [EVENTS]      (defaults 10000 and 50000)
 *
 * A small in-process HTTP server stands in for the API server so the
 * figures measure libtau, not a simulator: it serves paged NodeLists of
 * realistic Node objects (labels, annotations, capacity, conditions, ~2.5
 * KiB of JSON each), then one watch stream of EVENTS MODIFIED events as
 * fast as the socket takes them.  Prints:
 *   - initial sync time (start -> has_synced, 500 per page),
 *   - resident memory per cached object (RSS growth / NODES),
 *   - watch events applied per second (handler calls / time).
 */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tau/clock.h"
#include "tau/error.h"
#include "tau/kube.h"
#include "tau/kube_informer.h"

static int n_nodes = 10000;
static long n_events = 50000;
static atomic_long applied;
static atomic_int watch_served;

static int node_json(char *buf, size_t cap, int i, long rv)
{
	return snprintf(
	        buf, cap,
	        "{\"metadata\":{\"name\":\"node-%05d\",\"uid\":\"6f1c2b1e-%04x-4a5b-9c3d-%012d\","
	        "\"resourceVersion\":\"%ld\",\"creationTimestamp\":\"2026-01-02T03:04:05Z\","
	        "\"labels\":{\"beta.kubernetes.io/arch\":\"amd64\",\"beta.kubernetes.io/"
	        "os\":\"linux\","
	        "\"kubernetes.io/arch\":\"amd64\",\"kubernetes.io/hostname\":\"node-%05d\","
	        "\"kubernetes.io/os\":\"linux\",\"node.kubernetes.io/instance-type\":"
	        "\"Standard_ND96isr_H100_v5\",\"topology.kubernetes.io/region\":\"eastus\","
	        "\"topology.kubernetes.io/zone\":\"0\",\"tau.azure.com/gpu-class\":\"h100-ib\","
	        "\"agentpool\":\"gpu%d\"},\"annotations\":{\"node.alpha.kubernetes.io/ttl\":\"0\","
	        "\"volumes.kubernetes.io/controller-managed-attach-detach\":\"true\","
	        "\"csi.volume.kubernetes.io/"
	        "nodeid\":\"{\\\"disk.csi.azure.com\\\":\\\"node-%05d\\\"}\"}},"
	        "\"spec\":{\"providerID\":\"azure:///subscriptions/"
	        "00000000-0000-0000-0000-000000000000/"
	        "resourceGroups/mc_rg/providers/Microsoft.Compute/virtualMachineScaleSets/gpu/"
	        "virtualMachines/%d\",\"podCIDR\":\"10.244.%d.0/24\",\"taints\":[{\"key\":\"sku\","
	        "\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]},\"status\":{\"capacity\":{\"cpu\":"
	        "\"96\",\"memory\":\"1900Gi\",\"nvidia.com/gpu\":\"8\",\"rdma/ib\":\"8\",\"pods\":"
	        "\"110\",\"ephemeral-storage\":\"1000Gi\"},\"allocatable\":{\"cpu\":\"95800m\","
	        "\"memory\":\"1850Gi\",\"nvidia.com/gpu\":\"8\",\"rdma/ib\":\"8\",\"pods\":\"110\","
	        "\"ephemeral-storage\":\"900Gi\"},\"conditions\":[{\"type\":\"MemoryPressure\","
	        "\"status\":\"False\",\"lastHeartbeatTime\":\"2026-01-02T03:04:05Z\","
	        "\"lastTransitionTime\":\"2026-01-02T03:04:05Z\",\"reason\":"
	        "\"KubeletHasSufficientMemory\",\"message\":\"kubelet has sufficient memory "
	        "available\"},{\"type\":\"DiskPressure\",\"status\":\"False\","
	        "\"lastHeartbeatTime\":"
	        "\"2026-01-02T03:04:05Z\",\"lastTransitionTime\":\"2026-01-02T03:04:05Z\","
	        "\"reason\":"
	        "\"KubeletHasNoDiskPressure\",\"message\":\"kubelet has no disk "
	        "pressure\"},{\"type\":"
	        "\"Ready\",\"status\":\"True\",\"lastHeartbeatTime\":\"2026-01-02T03:04:05Z\","
	        "\"lastTransitionTime\":\"2026-01-02T03:04:05Z\",\"reason\":\"KubeletReady\","
	        "\"message\":\"kubelet is posting ready status\"}],\"addresses\":[{\"type\":"
	        "\"InternalIP\",\"address\":\"10.224.%d.%d\"},{\"type\":\"Hostname\",\"address\":"
	        "\"node-%05d\"}],\"nodeInfo\":{\"machineID\":\"%032d\",\"systemUUID\":"
	        "\"%08d-0000-0000-0000-000000000000\",\"bootID\":\"%08d-1111-2222-3333-"
	        "444444444444\","
	        "\"kernelVersion\":\"5.15.0-1073-azure\",\"osImage\":\"Ubuntu 22.04.5 LTS\","
	        "\"containerRuntimeVersion\":\"containerd://"
	        "1.7.25-1\",\"kubeletVersion\":\"v1.32.4\","
	        "\"kubeProxyVersion\":\"v1.32.4\",\"operatingSystem\":\"linux\",\"architecture\":"
	        "\"amd64\"}}}",
	        i, i & 0xffff, i, rv, i, i % 4, i, i, i % 256, i / 256, i % 256, i, i, i, i);
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void serve_list(int fd, const char *query)
{
	const char *c = strstr(query, "continue=");
	int start = c ? atoi(c + 9) : 0, end = start + 500;
	size_t cap = 600u * 4096u, len = 0;
	char *body = malloc(cap), hdr[256];

	if (end > n_nodes)
		end = n_nodes;
	len += (size_t)snprintf(body, cap,
	                        "{\"kind\":\"NodeList\",\"apiVersion\":\"v1\","
	                        "\"metadata\":{\"resourceVersion\":\"%d\"",
	                        n_nodes);
	if (end < n_nodes)
		len += (size_t)snprintf(body + len, cap - len, ",\"continue\":\"%d\"", end);
	len += (size_t)snprintf(body + len, cap - len, "},\"items\":[");
	for (int i = start; i < end; i++) {
		if (i > start)
			body[len++] = ',';
		len += (size_t)node_json(body + len, cap - len, i, i + 1);
	}
	len += (size_t)snprintf(body + len, cap - len, "]}");
	snprintf(hdr, sizeof(hdr),
	         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
	         len);
	write_all(fd, hdr, strlen(hdr));
	write_all(fd, body, len);
	free(body);
}

static void serve_watch(int fd)
{
	static const char hdr[] = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
	                          "Connection: close\r\n\r\n";
	size_t cap = 1u << 20, len = 0;
	char *buf = malloc(cap + 8192);

	write_all(fd, hdr, sizeof(hdr) - 1);
	if (atomic_fetch_add(&watch_served, 1) > 0) {
		/* Later watches: stay open and quiet until the client goes away. */
		char tmp[256];

		while (recv(fd, tmp, sizeof(tmp), 0) > 0)
			;
		free(buf);
		return;
	}
	for (long e = 0; e < n_events; e++) {
		len += (size_t)snprintf(buf + len, 64, "{\"type\":\"MODIFIED\",\"object\":");
		len += (size_t)node_json(buf + len, 8000, (int)(e % n_nodes), n_nodes + 1 + e);
		len += (size_t)snprintf(buf + len, 8, "}\n");
		if (len >= cap) {
			if (write_all(fd, buf, len) < 0)
				break;
			len = 0;
		}
	}
	len += (size_t)snprintf(
	        buf + len, 200,
	        "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Node\",\"apiVersion\":"
	        "\"v1\",\"metadata\":{\"resourceVersion\":\"%ld\"}}}\n",
	        n_nodes + n_events);
	write_all(fd, buf, len);
	free(buf);
}

static void *conn_main(void *arg)
{
	int fd = (int)(intptr_t)arg;
	char req[8192];
	size_t have = 0;

	for (;;) {
		char *end;
		ssize_t n = recv(fd, req + have, sizeof(req) - 1 - have, 0);

		if (n <= 0)
			break;
		have += (size_t)n;
		req[have] = '\0';
		end = strstr(req, "\r\n\r\n");
		if (end == NULL)
			continue;
		if (strstr(req, "watch=true") && strstr(req, "watch=true") < end) {
			serve_watch(fd);
			break;
		}
		{
			char *q = strchr(req, '?');

			serve_list(fd, q && q < end ? q : "");
		}
		have -= (size_t)(end + 4 - req);
		memmove(req, end + 4, have);
	}
	close(fd);
	return NULL;
}

static void *server_main(void *arg)
{
	int lfd = (int)(intptr_t)arg;

	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		pthread_t th;

		if (fd < 0)
			break;
		pthread_create(&th, NULL, conn_main, (void *)(intptr_t)fd);
		pthread_detach(th);
	}
	return NULL;
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "VmRSS:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	fclose(f);
	return kib;
}

static void on_update(void *arg, const cJSON *old_obj, const cJSON *new_obj)
{
	(void)arg;
	(void)old_obj;
	(void)new_obj;
	atomic_fetch_add(&applied, 1);
}

int main(int argc, char **argv)
{
	struct sockaddr_in addr = {.sin_family = AF_INET,
	                           .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(addr);
	tau_kube_config *cfg = NULL;
	tau_kube_client *c = NULL;
	tau_kube_loop *loop = NULL;
	tau_kube_informer *inf = NULL;
	tau_kube_handlers h = {.on_update = on_update};
	pthread_t srv;
	uint64_t t0, t_sync, t_ev0, t_ev1;
	long rss0, rss1;
	int lfd;
	char sample[8192];

	if (argc > 1)
		n_nodes = atoi(argv[1]);
	if (argc > 2)
		n_events = atol(argv[2]);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(lfd, 64) < 0 || getsockname(lfd, (struct sockaddr *)&addr, &alen) < 0) {
		perror("bench_informer: listen");
		return 1;
	}
	pthread_create(&srv, NULL, server_main, (void *)(intptr_t)lfd);
	pthread_detach(srv);
	if (tau_kube_config_new(&cfg) < 0)
		return 1;
	cfg->server = malloc(64);
	snprintf(cfg->server, 64, "http://127.0.0.1:%d", ntohs(addr.sin_port));
	cfg->qps = -1;
	if (tau_kube_client_new(&c, cfg) < 0 || tau_kube_loop_new(&loop, c) < 0 ||
	    tau_kube_informer_new(&inf, loop, &tau_kube_res_nodes, NULL, &h) < 0) {
		fprintf(stderr, "bench_informer: %s\n", tau_error_last()->msg);
		return 1;
	}
	rss0 = rss_kib();
	t0 = tau_clock_mono_ms();
	tau_kube_informer_start(inf);
	while (!tau_kube_informer_has_synced(inf))
		tau_kube_loop_run_for(loop, 5);
	t_sync = tau_clock_mono_ms();
	rss1 = rss_kib();
	t_ev0 = t_sync;
	while (atomic_load(&applied) < n_events) {
		tau_kube_loop_run_for(loop, 50);
		if (tau_clock_mono_ms() - t_ev0 > 600000)
			break;
	}
	t_ev1 = tau_clock_mono_ms();
	printf("bench_informer: %d nodes (%d bytes of JSON each), %ld watch events\n", n_nodes,
	       node_json(sample, sizeof(sample), 1234, 1), n_events);
	printf("initial sync (list 500/page -> has_synced): %llu ms (%.0f objects/s)\n",
	       (unsigned long long)(t_sync - t0),
	       (double)n_nodes * 1000.0 / (double)(t_sync - t0 ? t_sync - t0 : 1));
	printf("memory per cached object (RSS growth / nodes): %.1f KiB\n",
	       (double)(rss1 - rss0) / (double)n_nodes);
	printf("watch events applied: %ld in %llu ms = %.0f events/s\n", atomic_load(&applied),
	       (unsigned long long)(t_ev1 - t_ev0),
	       (double)atomic_load(&applied) * 1000.0 /
	               (double)(t_ev1 - t_ev0 ? t_ev1 - t_ev0 : 1));
	printf("cache size after events: %zu\n", tau_kube_informer_count(inf));
	tau_kube_informer_free(inf);
	tau_kube_loop_free(loop);
	tau_kube_client_free(c);
	tau_kube_config_free(cfg);
	close(lfd);
	return 0;
}

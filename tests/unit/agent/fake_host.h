/*
 * fake_host.h - fake host trees for the agent's unit tests: directories,
 * files and real unix sockets under a scratch root (what --host-root points at).
 * Test-only; included by the test programs that need it.
 */
#ifndef TAU_TEST_FAKE_HOST_H
#define TAU_TEST_FAKE_HOST_H

#include "tau/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

__attribute__((unused)) static void make_dirs(const char *root, const char *rel)
{
	char path[4096];
	size_t rlen = strlen(root);

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (char *p = path + rlen + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
}

__attribute__((unused)) static void write_file(const char *root, const char *rel, const char *text)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* A real unix socket file (what node-driver-registrar leaves behind). */
__attribute__((unused)) static void make_socket(const char *root, const char *rel)
{
	struct sockaddr_un addr;
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	memset(&addr, 0, sizeof(addr));
	addr.sun_family = AF_UNIX;
	assert_true((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s", root, rel) <
	            sizeof(addr.sun_path));
	assert_int_equal(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
	close(fd);
}

__attribute__((unused)) static int remove_entry(const char *path, const struct stat *st, int flag,
                                                struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/*
 * Start one of our fake node plugins (tests/fakes: fake_kubelet, fake_csi_driver) and wait,
 * at most 10 s, for its "ready" line.  Returns its pid; stop it with stop_fake.
 */
__attribute__((unused)) static pid_t start_fake(char *const argv[])
{
	int fds[2];
	pid_t pid;
	char buf[64] = "";
	size_t got = 0;

	assert_int_equal(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fds[1]);
	while (got < sizeof(buf) - 1 && strstr(buf, "ready") == NULL) {
		struct pollfd pfd = {.fd = fds[0], .events = POLLIN};
		ssize_t n;

		buf[got] = '\0';
		if (poll(&pfd, 1, 10000) <= 0)
			break;
		n = read(fds[0], buf + got, sizeof(buf) - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = '\0';
	}
	close(fds[0]);
	if (strstr(buf, "ready") == NULL)
		fail_msg("%s did not get ready", argv[0]);
	return pid;
}

__attribute__((unused)) static void stop_fake(pid_t pid)
{
	int status = 0;

	kill(pid, SIGTERM);
	assert_int_equal(waitpid(pid, &status, 0), pid);
}

#endif /* TAU_TEST_FAKE_HOST_H */

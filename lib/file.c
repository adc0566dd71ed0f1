/*
 * file.c - reading a small file whole, with a cap (tau/file.h).
 *
 * read() in chunks into a capped tau_buf rather than trusting a size from
 * fstat: /proc files and pipes report 0, and a file may grow between the
 * two calls.
 */
#include "tau/file.h"

#include "tau/buf.h"
#include "tau/error.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

int tau_file_read(char **out, size_t *len, const char *path, size_t cap, const char *what)
{
	tau_buf b = TAU_BUF_INIT(cap);
	char chunk[8192];
	char *text = NULL;
	int fd, rc = 0;

	if (what == NULL)
		what = "file";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tau_error_set(TAU_EIO, "cannot read %s %s: %s", what, path, strerror(errno));
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = tau_error_set(TAU_EIO, "cannot read %s %s: %s", what, path,
			                   strerror(errno));
			break;
		}
		if (n == 0)
			break;
		rc = tau_buf_append(&b, chunk, (size_t)n);
		if (rc == -TAU_ETOOBIG)
			rc = tau_error_set(TAU_ETOOBIG, "%s %s is larger than %zu bytes", what,
			                   path, cap);
		if (rc < 0)
			break;
	}
	close(fd);
	if (rc == 0 && (text = tau_buf_take(&b, len)) == NULL)
		rc = -TAU_ENOMEM;
	tau_buf_free(&b);
	if (rc < 0)
		return rc;
	*out = text;
	return 0;
}

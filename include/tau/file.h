/*
 * tau/file.h - reading small files whole, with a cap.
 *
 * Tokens, CA bundles, certificates, allowlists and map files are read whole
 * by one function that refuses a file larger than the caller's cap (so a
 * mistaken path to a log or a device cannot eat the memory) and says which
 * file, what it was for and why it failed.
 */
#ifndef TAU_FILE_H
#define TAU_FILE_H

#include <stddef.h>

/**
 * Read the whole file at `path`, at most `cap` bytes, into a new NUL-terminated buffer.
 *
 * @param out   receives the bytes (free()); untouched on failure.
 * @param len   receives the length, not counting the NUL; may be NULL.
 * @param path  the file; must not be NULL.
 * @param cap   largest size accepted, in bytes.
 * @param what  what the file is for, used in messages ("token file"); NULL = "file".
 * @return 0; -TAU_EIO "cannot read <what> <path>: <reason>" (missing, unreadable, a
 *         directory); -TAU_ETOOBIG "<what> <path> is larger than <cap> bytes";
 *         -TAU_ENOMEM.
 */
int tau_file_read(char **out, size_t *len, const char *path, size_t cap, const char *what);

#endif /* TAU_FILE_H */

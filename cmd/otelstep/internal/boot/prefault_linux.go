package boot

import "syscall"

// madvPopulateRead is MADV_POPULATE_READ (Linux 5.14): map the pages of a
// range now, as reading each would. Older kernels refuse it (EINVAL) and
// otelstep starts as before.
const madvPopulateRead = 22

// Prefault maps every read-only mapping of the binary (text, rodata and
// pclntab) into the process in one madvise each. Starting touches pages
// all over the binary: the package initialisers, config parsing, building
// the pipelines, and the runtime's stack and type tables. Each first touch
// of a page is a fault, in which Linux maps the 64 KiB around it; about 450
// of them on the embedded default, each far slower on the job's VMs than
// mapping the same pages in bulk. The pages are the page cache's (the
// binary's file), shared and clean, so this reads nothing from disk when
// the binary was run before, and copies nothing. They count in the resident
// set until cmd/otelstep releases them once running (startpages.go): the
// start's peak is about 6 MiB higher, a running job's is not.
//
// init calls it, and init ignores its error: any failure leaves the pages
// to be faulted in as before. A later call maps in again what was released
// since. It uses only syscall (see the package comment), so its errors are
// bare errno values: EINVAL from a kernel without MADV_POPULATE_READ.
func Prefault() error {
	var exe [1024]byte
	n, err := syscall.Readlink("/proc/self/exe", exe[:])
	if err != nil {
		return err
	}
	if n == len(exe) {
		return syscall.ENAMETOOLONG
	}
	fd, err := syscall.Open("/proc/self/maps", syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	// The binary's mappings come first in the file: the first read holds
	// them.
	var buf [8 << 10]byte
	m, err := syscall.Read(fd, buf[:])
	syscall.Close(fd)
	if err != nil {
		return err
	}
	spans, k := readOnlyOf(buf[:max(m, 0)], exe[:n])
	if k == 0 {
		return syscall.ENOENT
	}
	for _, r := range spans[:k] {
		if r.hi <= r.lo {
			continue
		}
		if _, _, e := syscall.Syscall(syscall.SYS_MADVISE, r.lo, r.hi-r.lo, madvPopulateRead); e != 0 {
			return e
		}
	}
	return nil
}

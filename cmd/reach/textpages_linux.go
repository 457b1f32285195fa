package main

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mapOwnPagesSmall has the kernel map reach's own executable again in
// small pages, holding only what serving uses. `reach serve` calls it
// once, after the gateway is built and before it serves.
//
// A file the build (or a download, or a copy) just wrote sits in the page
// cache in large folios, and the kernel maps a large folio whole when one
// of its pages is touched (with a PMD when it is 2 MiB): a binary just
// built measured about 9 MB more RSS under load than the same binary read
// from disk (docs/BENCHMARKS.md, "rss17"). So: MADV_NOHUGEPAGE on the
// read-only mappings of the file (code, rodata, the functions' tables),
// MADV_DONTNEED on them (unmapped, not lost: they are the file's pages,
// mapped again from it as they are used; a mapping that holds an anonymous
// page, written once by the loader's relocations, is left alone), then
// POSIX_FADV_DONTNEED on the file: its pages no process maps leave the
// page cache, and what serving uses is read again from disk, in the
// folios readahead makes, as after a reboot. What only starting used
// (package inits, the configuration's checks) is no longer counted: the
// binary's pages under 128 sessions fell from 31-41 MB to about 25.
func mapOwnPagesSmall() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	smaps, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		return
	}
	for _, m := range ownFileMappings(smaps, exe) {
		madvise(m, unix.MADV_NOHUGEPAGE)
		madvise(m, unix.MADV_DONTNEED)
	}
	if f, err := os.Open(exe); err == nil {
		unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
		f.Close()
	}
}

func madvise(m mapping, advice int) {
	unix.Syscall(unix.SYS_MADVISE, m.start, m.end-m.start, uintptr(advice))
}

// mapping is an address range of the process, [start, end).
type mapping struct{ start, end uintptr }

// ownFileMappings reads /proc/PID/smaps for the mappings of the file exe
// that are neither writable nor hold an anonymous page: every page there
// is the file's, and can be mapped from it again.
func ownFileMappings(smaps []byte, exe string) []mapping {
	var out []mapping
	var m mapping
	ok := false
	flush := func() {
		if ok {
			out = append(out, m)
		}
		ok = false
	}
	sc := bufio.NewScanner(bytes.NewReader(smaps))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		if key := fields[0]; strings.HasSuffix(key, ":") {
			if ok && key == "Anonymous:" && (len(fields) < 2 || fields[1] != "0") {
				ok = false
			}
			continue
		}
		// A mapping's first line: "start-end perms offset dev inode [path]".
		flush()
		if len(fields) != 6 || fields[5] != exe || !strings.HasPrefix(fields[1], "r-") {
			continue
		}
		a, b, found := strings.Cut(fields[0], "-")
		start, err1 := strconv.ParseUint(a, 16, 64)
		end, err2 := strconv.ParseUint(b, 16, 64)
		if found && err1 == nil && err2 == nil && end > start {
			m, ok = mapping{uintptr(start), uintptr(end)}, true
		}
	}
	flush()
	return out
}

//go:build unix

package main

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// dataFolderHeld says whether a gateway holds the data folder dir now (the
// exclusive lock on its reach.lock that serve takes), and its process id
// when it wrote one. It asks for a shared lock without waiting, and lets
// it go at once: it creates nothing and holds nothing.
func dataFolderHeld(dir string) (bool, int) {
	path := filepath.Join(dir, "reach.lock")
	f, err := os.Open(path)
	if err != nil {
		return false, 0
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return true, pidOf(path)
		}
		return false, 0
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, 0
}

// fileOwner returns the user id that owns the file at path.
func fileOwner(path string) (int, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
